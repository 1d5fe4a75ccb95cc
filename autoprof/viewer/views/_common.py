"""Pieces every page shares: the run header, error display, safe calls into the analysis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from autoprof.viewer._context import Context
from autoprof.viewer._loading import Loaded
from autoprof.viewer._text import md_escape

T = TypeVar("T")


def no_folder(ctx: Context) -> bool:
    """Say so and return True when there is no traces folder to read."""
    if not ctx.root_exists:
        st.info(f"The traces folder {md_escape(ctx.root)} does not exist (yet). Choose a folder "
                "in the sidebar, set AUTOPROF_DIR, or record a run with @autoprof.")
        return True
    return False


def current_run(ctx: Context, title: str) -> Any:
    """Draw the page title and the run's state; return the Run, or None if there is none."""
    st.title(title)
    if ctx.current is None:
        if not no_folder(ctx):
            if ctx.runs_error:
                show_error("The traces folder could not be listed.", ctx.runs_error)
            else:
                st.info("No run selected. Pick a run in the sidebar, or open a trace by path "
                        "or upload.")
        return None
    loaded = ctx.current
    st.caption(f"Run: {md_escape(loaded.label)}")
    if not loaded.ok:
        show_error("This run could not be loaded.", loaded.error or "unknown error")
        return None
    failed_note(loaded)
    return loaded.run


def failed_note(loaded: Loaded) -> None:
    manifest = getattr(loaded.run, "manifest", None) or {}
    status = manifest.get("status")
    if status in (None, "complete"):
        return
    err = manifest.get("error") or {}
    text = f"Run status: {status}."
    if isinstance(err, dict) and err:
        text += (f" {err.get('type', 'error')} during {err.get('phase', '?')}: "
                 f"{err.get('message', '')}")
    (st.error if status == "failed" else st.warning)(md_escape(text))


def show_error(headline: str, line: str) -> None:
    """A red headline (escaped: it may hold run names) and the error line as plain text."""
    st.error(md_escape(headline))
    st.code(line, language=None, wrap_lines=True)


def call(what: str, fn: Callable[[], T]) -> T | None:
    """Run one analysis call; if it is missing or fails, say so on the page and return None."""
    try:
        return fn()
    except (AttributeError, NotImplementedError, ImportError) as e:
        st.info(f"{md_escape(what)}: not available from autoprof.analysis yet "
                f"({md_escape(type(e).__name__)}).")
    except Exception as e:  # noqa: BLE001 - one failing analysis must not take the page down
        st.warning(f"{md_escape(what)} failed: {md_escape(type(e).__name__)}: {md_escape(e)}")
    return None
