"""Ranks: the straggler, the ranks' spread and outliers, a rank x bucket and a rank x step
heatmap (analysis/scale/heatmap.py: a few thousand cells at most, consecutive ranks grouped
past that), per-rank bars while the ranks fit side by side, and the rank table (folded away
past that many ranks: never a row per rank by default at a thousand ranks). A run analysed
rank by rank (viewer/_loading.py) draws the same from its ranks' cached results."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from autoprof.analysis.scale.heatmap import (
    rank_by_bucket,
    rank_by_step,
    rank_outliers,
    results_breakdown,
    results_steps,
)
from autoprof.analysis.scale.reduce import MAD_TO_SD, RunAnswer
from autoprof.units import fmt_us
from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer.views._common import current_run, readable

_CHARTS = (
    ("step_time_us_median", "Step time (median)", "time"),
    ("compute_us_median", "Before the first collective (median)", "time"),
    ("gpu_busy_pct", "GPU busy", "busy (%)"),
    ("collective_us_median", "In collectives per step (median)", "time"),
)
BARS_MAX_RANKS = 64  # past this many ranks, bars and the table give way to the heatmaps


def heatmap(grid: pd.DataFrame, title: str, value_title: str, columns_title: str
            ) -> alt.Chart:
    """One rectangle per (group of ranks, column): ranks on a numeric axis (rank_lo to
    rank_hi + 1), so 1,024 ranks read as a band, not 1,024 labels."""
    data = grid.assign(rank_end=grid["rank_hi"] + 1)
    rows = int(data["rank_lo"].nunique()) if len(data) else 0
    chart: alt.Chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("column:N", title=columns_title, sort=None, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("rank_lo:Q", title="rank", scale=alt.Scale(zero=False, nice=False),
                sort="descending"),
        y2="rank_end:Q",
        color=alt.Color("value:Q", title=value_title, scale=alt.Scale(scheme="viridis")),
        tooltip=[alt.Tooltip("rank_lo:Q", title="first rank"),
                 alt.Tooltip("rank_hi:Q", title="last rank"),
                 alt.Tooltip("ranks:Q", title="ranks"), alt.Tooltip("column:N", title=None),
                 alt.Tooltip("value:Q", title=value_title, format=".4g")],
    ).properties(title=title, height=int(min(640, max(180, 6 * rows))))
    return chart


def _spread_line(table: pd.DataFrame, outliers: pd.DataFrame) -> str:
    step = table["step_time_us_median"].to_numpy(dtype=float)
    step = step[np.isfinite(step)]
    if not len(step):
        return f"{len(table)} ranks."
    med = float(np.median(step))
    mad = MAD_TO_SD * float(np.median(np.abs(step - med)))
    return (f"{len(table)} ranks: median step {fmt_us(med)} (MAD {fmt_us(mad)}, slowest "
            f"{fmt_us(float(step.max()))}); {len(outliers)} outlier rank(s) by robust z.")


def _heatmaps(by_bucket_rows: pd.DataFrame, by_step_rows: pd.DataFrame) -> None:
    """The two grids, from breakdown rows (rank, step, step_us, <bucket>_us): the merged
    table's per-step breakdown, or the map's per-rank results (analysis/scale/heatmap.py)."""
    by_bucket, by_step = st.tabs(["rank x bucket", "rank x step"])
    grid = rank_by_bucket(by_bucket_rows)
    with by_bucket:
        if len(grid) and int(grid["ranks"].max()) > 1:
            st.caption("Consecutive ranks grouped: each cell is their mean.")
        st.altair_chart(heatmap(grid, "Share of the mean step per bucket", "% of step",
                                "bucket"), width="stretch")
    grid = rank_by_step(by_step_rows)
    with by_step:
        st.altair_chart(heatmap(grid, "Step time per rank", "step (µs)", "step"),
                        width="stretch")


def _bars(table: pd.DataFrame, straggler: int | None) -> None:
    df = table.assign(who=(table["rank"] == straggler).map(
        {True: "straggler", False: "other ranks"}))
    for slot, (col, title, unit) in zip(st.columns(len(_CHARTS)), _CHARTS, strict=True):
        chart = _charts.bars(df, "rank", col, title, unit,
                             color="who" if straggler is not None else None,
                             colors={"other ranks": "#4c78a8", "straggler": "#e45756"},
                             time_us=col.endswith(("_us", "_us_median")))
        slot.altair_chart(chart, width="stretch")


def render(ctx: Context) -> None:
    run = current_run(ctx, "Ranks", ranks=_rank_by_rank)
    if run is None:
        return
    table: pd.DataFrame = run.ranks()
    if run.world_size <= 1 and len(table) <= 1:
        st.info("A single-process run: one rank, nothing to compare.")
        st.dataframe(readable(table), hide_index=True, width="stretch")
        return
    breakdown = run.breakdown()
    _page(table, run.straggler_rank, breakdown, breakdown)


def _rank_by_rank(answer: RunAnswer) -> None:
    """A run analysed rank by rank: the same page, from its ranks' results."""
    st.caption(f"{len(answer.ranks)} ranks analysed one by one (their results are cached "
               "beside their traces).")
    _page(answer.rank_table(), answer.straggler_rank, results_breakdown(answer.ranks),
          results_steps(answer.ranks))


def _page(table: pd.DataFrame, straggler: int | None, by_bucket_rows: pd.DataFrame,
          by_step_rows: pd.DataFrame) -> None:
    if straggler is None:
        st.write(f"{len(table)} ranks, no straggler: the analysis finds them balanced.")
    else:
        st.error(f"Straggler: rank {int(straggler)} (the other ranks wait for it).")
    outliers = rank_outliers(table)
    st.write(_spread_line(table, outliers))
    _heatmaps(by_bucket_rows, by_step_rows)
    if len(outliers):
        st.subheader("Outlier ranks (step time, robust z)")
        st.dataframe(readable(outliers.head(20)), hide_index=True, width="stretch")
    if len(table) <= BARS_MAX_RANKS:
        _bars(table, straggler)
        st.dataframe(readable(table), hide_index=True, width="stretch")
        return
    with st.expander(f"All {len(table)} ranks"):
        st.dataframe(readable(table), hide_index=True, width="stretch")
