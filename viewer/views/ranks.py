"""Ranks: per-rank step time, GPU busy, time in collectives, and the straggler."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from viewer import _charts
from viewer._context import Context, context
from viewer.views._common import call, current_run

_CHARTS = (
    ("step_time_us_median", "Median step time per rank", "time (µs)"),
    ("gpu_busy_pct", "GPU busy per rank", "busy (%)"),
    ("collective_us_median", "Median time in collectives per step, per rank", "time (µs)"),
)


def render(ctx: Context) -> None:
    run = current_run(ctx, "Ranks")
    if run is None:
        return
    world = int(getattr(run, "world_size", 1) or 1)
    table: pd.DataFrame | None = call("Rank table", run.ranks)
    if world <= 1 and (table is None or len(table) <= 1):
        st.info("A single-process run: one rank, nothing to compare.")
    if table is None or not len(table):
        return
    straggler = call("Straggler", lambda: run.straggler_rank)
    if straggler is None:
        st.write("No straggler: the ranks are within the analysis' tolerance of each other.")
    else:
        st.error(f"Straggler: rank {int(straggler)}")
    if "rank" in table.columns:
        df = table.assign(is_straggler=(table["rank"] == straggler).map(
            {True: "straggler", False: "other ranks"}))
        present = [c for c in _CHARTS if c[0] in df.columns]
        for slot, (col, title, unit) in zip(st.columns(max(len(present), 1)), present,
                                            strict=False):
            slot.altair_chart(_charts.bars(df, "rank", col, title, unit, color="is_straggler"),
                              width="stretch")
    st.dataframe(table, hide_index=True, width="stretch")


if __name__ == "__main__":
    render(context())
