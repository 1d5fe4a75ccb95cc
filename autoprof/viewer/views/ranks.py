"""Ranks: per-rank step time, GPU busy, time in collectives, and the straggler."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer.views._common import current_run, readable

_CHARTS = (
    ("step_time_us_median", "Step time (median)", "time"),
    ("compute_us_median", "Before the first collective (median)", "time"),
    ("gpu_busy_pct", "GPU busy", "busy (%)"),
    ("collective_us_median", "In collectives per step (median)", "time"),
)


def render(ctx: Context) -> None:
    run = current_run(ctx, "Ranks")
    if run is None:
        return
    table: pd.DataFrame = run.ranks()
    if run.world_size <= 1 and len(table) <= 1:
        st.info("A single-process run: one rank, nothing to compare.")
        st.dataframe(readable(table), hide_index=True, width="stretch")
        return
    straggler = run.straggler_rank
    if straggler is None:
        st.write(f"{len(table)} ranks, no straggler: the analysis finds them balanced.")
    else:
        st.error(f"Straggler: rank {int(straggler)} (the other ranks wait for it).")
    df = table.assign(who=(table["rank"] == straggler).map(
        {True: "straggler", False: "other ranks"}))
    for slot, (col, title, unit) in zip(st.columns(len(_CHARTS)), _CHARTS, strict=True):
        chart = _charts.bars(df, "rank", col, title, unit,
                             color="who" if straggler is not None else None,
                             colors={"other ranks": "#4c78a8", "straggler": "#e45756"},
                             time_us=col.endswith(("_us", "_us_median")))
        slot.altair_chart(chart, width="stretch")
    st.dataframe(readable(table), hide_index=True, width="stretch")
