"""Self vs total: per-op Self and total time on CPU and GPU, call counts, the table."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from autoprof.analysis.metrics.lines import ops_with_lines
from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer.views._common import current_run

# Self time first: sorted by total, wrapper rows (ProfilerStep, the function itself) hide the
# ops that take the time
SORT_COLUMNS = ["self_cpu_us", "self_device_us", "cpu_total_us", "device_total_us", "calls"]
LANES = {"CPU": ("self_cpu_us", "cpu_total_us"), "GPU": ("self_device_us", "device_total_us")}


def render(ctx: Context) -> None:
    run = current_run(ctx, "Self vs total")
    if run is None:
        return
    ops: pd.DataFrame = ops_with_lines(run.ops(), run.analysis.source_lines)
    if not len(ops):
        st.info("No ops in this trace.")
        return
    c1, c2, c3 = st.columns([3, 2, 1])
    needle = c1.text_input("Filter ops by name (substring)", key="ops_filter")
    sort_by = c2.selectbox("Sort by", SORT_COLUMNS, key="ops_sort")
    top_n = int(c3.number_input("Top", min_value=3, max_value=100, value=15, key="ops_top"))
    shown = ops
    if needle:
        shown = ops[ops["name"].astype(str).str.contains(needle, case=False, regex=False)]
    shown = shown.sort_values(sort_by, ascending=False, kind="stable")
    st.caption("Self: time in the op itself. Total: the op and everything it called. GPU time "
               "is attributed to the op that launched the kernel.")
    _charts_for(shown, top_n)
    st.subheader("Ops table")
    st.dataframe(shown, hide_index=True, width="stretch", column_config=_column_config(shown))
    st.download_button(
        "Download ops table (CSV)", shown.to_csv(index=False).encode(), file_name="ops.csv",
        mime="text/csv", on_click="ignore",
    )


def _charts_for(shown: pd.DataFrame, top_n: int) -> None:
    drew = False
    for lane, (self_col, total_col) in LANES.items():
        rows = shown[(shown[total_col] > 0) | (shown[self_col] > 0)]
        if not len(rows):
            st.caption(f"No {lane} time recorded.")
            continue
        title = f"{lane}: Self vs total per op (top {min(top_n, len(rows))} by self {lane} time)"
        st.altair_chart(_charts.self_vs_total(rows, self_col, total_col, title, top_n),
                        width="stretch")
        drew = True
    if not drew:
        st.info("No op matches the filter.")


def _column_config(df: pd.DataFrame) -> dict[str, Any]:
    cfg: dict[str, Any] = {"name": st.column_config.TextColumn("name", width="large")}
    for c in df.columns:
        if str(c).endswith("_us"):
            cfg[c] = st.column_config.NumberColumn(f"{c[:-3]} (µs)", format="%.2f")
    return cfg

