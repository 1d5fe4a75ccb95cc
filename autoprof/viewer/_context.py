"""What the entry script hands to every page: the folder, its runs, the loaded selection."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import streamlit as st

from autoprof.viewer._shown import Loaded

_KEY = "_autoprof_viewer_context"


@dataclass
class Context:
    root: Path
    root_exists: bool
    runs: pd.DataFrame | None = None
    runs_error: str = ""
    current: Loaded | None = None
    compared: list[Loaded] = field(default_factory=list)


def publish(ctx: Context) -> None:
    """Called by the entry script before the page runs."""
    st.session_state[_KEY] = ctx


def context() -> Context:
    """The context the entry script published for this script run."""
    ctx = st.session_state.get(_KEY)
    if not isinstance(ctx, Context):
        raise RuntimeError("viewer page run without viewer/app.py: start the viewer with "
                           "`streamlit run viewer/app.py`")
    return ctx
