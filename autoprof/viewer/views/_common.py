"""Pieces every page shares: the run header, error display, missing values."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd
import streamlit as st
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from autoprof.analysis.analysis import record_of
from autoprof.analysis.report.model.base import given
from autoprof.analysis.scale.reduce import RunAnswer
from autoprof.units import fmt_bytes, fmt_flops, fmt_value
from autoprof.viewer._context import Context
from autoprof.viewer._text import md_escape

if TYPE_CHECKING:
    from autoprof.analysis import Run

T = TypeVar("T")


def no_folder(ctx: Context) -> bool:
    """Say so and return True when there is no traces folder to read."""
    if not ctx.root_exists:
        st.info(f"The traces folder {md_escape(ctx.root)} does not exist (yet). Record a run "
                "with @autoprof, or start the viewer on another folder (`autoprof view DIR`).")
        return True
    return False


def current_run(ctx: Context, title: str,
                ranks: Callable[[RunAnswer], None] | None = None) -> Run | None:
    """Draw the page title and the run's state; return the run as one events table, or None.
    A run analysed rank by rank (``RunAnswer``, viewer/_shown.py) is drawn by ``ranks``, the
    page's own view of one (the Overview's, the Ranks page's), or on a page without one gets a
    note on where to look instead; None is returned for it."""
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
    for note in loaded.notes:
        st.info(md_escape(note))
    if (answer := loaded.rank_by_rank) is not None:
        (ranks or (lambda a: _rank_by_rank_note(a, title)))(answer)
        return None
    run = loaded.one_table
    if run is None:
        show_error("This run could not be loaded.", loaded.error or "unknown error")
        return None
    failed_note(run)
    return run


def _rank_by_rank_note(answer: RunAnswer, title: str) -> None:
    """Why a page of one events table is empty for a run analysed rank by rank, and the
    traces of its slowest ranks, to open one by path in the sidebar."""
    report = answer.report()
    st.info(md_escape(
        f"This run has {len(report.ranks)} ranks: it is analysed rank by rank, never as one "
        f"table of all {report.events:,} events. Its Overview and Ranks pages show the run; "
        f"for the {title} page, open one rank's trace by path in the sidebar. The "
        "straggler's trace first, then the slowest ranks':"))
    trace_of = {r.rank: given(r.trace) for r in report.ranks}
    first = [] if report.straggler_rank is None else [report.straggler_rank]
    section = given(report.rank_by_rank)
    worst = [w.rank for w in section.worst_ranks] if section is not None else []
    ranks = dict.fromkeys(first + worst)
    st.code("\n".join(trace_of[r] for r in ranks if r in trace_of), language=None)


def failed_note(run: Run) -> None:
    record = record_of(run)
    if record is None or record.status == "complete":
        return
    status, err = record.status, record.error or {}
    text = f"Run status: {status}."
    if err:
        text += (f" {err.get('type', 'error')} during {err.get('phase', '?')}: "
                 f"{err.get('message', '')}")
    (st.error if status == "failed" else st.warning)(md_escape(text))


def show_error(headline: str, line: str) -> None:
    """A red headline (escaped: it may hold run names) and the error line as plain text."""
    st.error(md_escape(headline))
    st.code(line, language=None, wrap_lines=True)


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """A table as people read it: each number in the unit its column names (`_us`, `_pct`,
    `_bytes`, `flops`, ... through autoprof.units), a missing value as a dash."""
    out = df.copy()
    for col in out.columns:
        numeric = is_numeric_dtype(out[col]) and not is_bool_dtype(out[col])
        out[col] = [_cell(str(col), v, numeric) for v in out[col].tolist()]
    return out


def _cell(column: str, value: Any, numeric: bool) -> Any:
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if not numeric:
        return value
    unit = column.lower().rsplit("_", 1)[-1]  # the unit a column ends with
    if unit == "bytes":
        return dash(fmt_bytes(value))
    if unit == "flops":
        return dash(fmt_flops(value))
    return dash(fmt_value(column, value))


def device_name(run: Run) -> str:
    """The device name as the manifest or the trace metadata states it."""
    record = record_of(run)
    if record is not None and record.device_name:
        return record.device_name
    for meta in run.trace_metadata:
        props = meta.get("deviceProperties")
        if isinstance(props, list) and props and isinstance(props[0], dict):
            if props[0].get("name"):
                return str(props[0]["name"])
    return "CUDA GPU" if run.is_cuda else "CPU"


def dash(text: str | None) -> str:
    """A number formatted by autoprof.units, with a missing value shown as a dash."""
    return "—" if text is None or text in ("", "n/a") else text
