"""Source: the user's file with time per line for the lines autoprof attributed ops to
(like pyinstrument's and Scalene's line views). Every number comes from
``Run.analysis.source_lines`` (autoprof.analysis.metrics.lines); this page reads the source
file only to show its text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from autoprof.analysis.metrics.lines import file_lines, files_by_time
from autoprof.analysis.report.lines import short_path
from autoprof.runfolder import confine
from autoprof.units import fmt_us
from autoprof.viewer._context import Context
from autoprof.viewer.views._common import current_run

MAX_SOURCE_BYTES = 8 * 1024**2  # a larger "source file" is not shown
CONTEXT_LINES = 3  # lines of code shown around each line with time
_NUMBERS = ("self_cpu_us", "gpu_us", "sync_us")


def _code(path: str) -> list[str] | None:
    """The file's lines; None when it cannot be shown: a path a lines trace names may be
    anything, so it is read as every reader reads (``runfolder.confine``: a regular file,
    never a FIFO or a device) and only when small enough to be source code."""
    try:
        data = confine.read_regular(Path(path), MAX_SOURCE_BYTES)
    except (OSError, ValueError):  # ReadRefused is a ValueError
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _listing(timed: pd.DataFrame, code: list[str], whole: bool) -> pd.DataFrame:
    """One row per shown line of the file: its number, time columns ("" when none), code."""
    by_line = {int(r["line"]): r for r in timed.to_dict(orient="records")}
    keep = set(range(1, len(code) + 1)) if whole else {
        n for line in by_line for n in range(line - CONTEXT_LINES, line + CONTEXT_LINES + 1)
        if 1 <= n <= len(code)}
    rows: list[dict[str, Any]] = []
    for n in sorted(keep):
        r = by_line.get(n)
        rows.append({"line": n,
                     **{k: fmt_us(float(r[k])) if r is not None and r[k] else ""
                        for k in _NUMBERS},
                     "module": str(r["module"]) if r is not None else "",
                     "code": code[n - 1]})
    return pd.DataFrame(rows)


def render(ctx: Context) -> None:
    run = current_run(ctx, "Source")
    if run is None:
        return
    lines = run.analysis.source_lines
    if not lines.available:
        st.info("This run has no source lines: it was recorded with source_lines=False, "
                "before autoprof recorded them, or it is not a run folder.")
        return
    st.caption(f"{lines.attribution.match_pct:.1f}% of the steps' op self time has a line. "
               "Times are per step: self CPU of the line's ops, the GPU work they launched, "
               "the host syncs inside them.")
    files = files_by_time(lines)
    path = st.selectbox("File", files, format_func=short_path, key="source_file")
    if path is None:
        return
    timed = file_lines(lines, path)
    code = _code(path)
    if code is None:
        st.warning(f"{path} cannot be read on this machine: the lines with time only.")
        st.dataframe(timed, hide_index=True, width="stretch")
        return
    whole = st.toggle("Whole file", value=False, key="source_whole")
    st.dataframe(_listing(timed, code, whole), hide_index=True, width="stretch",
                 column_config={"code": st.column_config.TextColumn(width="large")})
