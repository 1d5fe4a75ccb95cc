"""Where the time goes: the seven buckets of each step as a stacked bar, the ranked
opportunities, and the host bucket of each idle GPU stretch for the Timeline.

Draws what the analysis computed (metrics/breakdown.py, diagnose/opportunities.py); computes
no statistic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from autoprof.analysis import Run
from autoprof.analysis.kinds import BUCKET_COLOURS, BUCKETS
from autoprof.analysis.metrics.breakdown import idle_segments
from autoprof.analysis.metrics.lines import with_where_lines
from autoprof.analysis.report.lines import short_source
from autoprof.analysis.report.speed import predicted, speed_text
from autoprof.units import fmt_pct, fmt_us
from autoprof.viewer import _charts

LEGEND_COLUMNS = 4


def show_breakdown(run: Run) -> None:
    """A stacked bar per step (and rank): how its time splits into the buckets it has.

    The legend, below the bars, names every bucket with time in this run and no other (a
    legend beside a short chart is cut to what fits its height); times are drawn in the unit
    that suits the longest step (ms for ms-scale steps)."""
    steps = run.breakdown()
    if steps.empty:
        return
    present = [b for b in BUCKETS if float(steps[f"{b}_us"].abs().sum()) > 0]
    if not present:
        return
    steps = steps.assign(between_calls_us=steps["between_calls_us"].fillna(0.0))
    long = steps.melt(id_vars=["rank", "step", "step_us", "between_calls_us"],
                      value_vars=[f"{b}_us" for b in present], var_name="bucket",
                      value_name="time_us")
    long["bucket"] = long["bucket"].str.removesuffix("_us")
    long["label"] = [f"rank {r} step {s}" if run.world_size > 1 else f"step {s}"
                     for r, s in zip(long["rank"], long["step"], strict=True)]
    long["order"] = long["bucket"].map({b: i for i, b in enumerate(BUCKETS)})
    long, unit = _charts.in_unit(long, ["time_us", "step_us", "between_calls_us"])
    st.altair_chart(_chart(long, present, unit), width="stretch")


def _chart(long: pd.DataFrame, present: Sequence[str], unit: str) -> alt.Chart:
    scale = alt.Scale(domain=present, range=[BUCKET_COLOURS[b] for b in present])
    legend = alt.Legend(orient="bottom", columns=LEGEND_COLUMNS, title="where the time goes",
                        labelLimit=200, symbolLimit=len(present))
    chart: alt.Chart = alt.Chart(long).mark_bar().encode(
        y=alt.Y("label:N", title=None, sort=None),
        x=alt.X("time_us:Q", title=f"time in the step ({unit})", stack="zero"),
        color=alt.Color("bucket:N", scale=scale, legend=legend),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("label:N", title="step"), alt.Tooltip("bucket:N"),
                 alt.Tooltip("time_us:Q", title=unit, format=",.3g"),
                 alt.Tooltip("step_us:Q", title=f"step ({unit})", format=",.3g"),
                 alt.Tooltip("between_calls_us:Q", title=f"between calls ({unit})",
                             format=",.3g")],
    )
    # a fixed height is shared with the legend below and squeezed the bars to lines: each
    # step gets its own band instead, the legend adds its rows under them
    shown: alt.Chart = chart.properties(title="Where the time goes, per step",
                                        height=alt.Step(24))
    return shown


def show_opportunities(run: Run) -> None:
    """The non-compute buckets ranked by time per step, with where and what to do."""
    ops: list[dict[str, Any]] = run.analysis.opportunities
    if not ops:
        return
    ops = with_where_lines(ops, run.analysis.source_lines)  # each where's source line, if any
    st.subheader("Opportunities (the fix predicted to gain most first, then bounds)")
    rows = [{
        "cause": o["cause"],
        "per step": fmt_us(o["us_per_step"]),
        "share of step": fmt_pct(o["pct_of_step"]),
        "predicted fix": _predicted(o),
        "max speed-up": "—" if predicted(o) or not o.get("max_speedup")
        else f"{o['max_speedup']:.2f}x",
        "where": "; ".join(f"{w['name']} ({fmt_us(w['us_per_step'])})" for w in o["where"]),
        "line": next((short_source(str(w["source"])) for w in o["where"] if w.get("source")), ""),
        "hint": o["hint"],
    } for o in ops]
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def _predicted(o: dict[str, Any]) -> str:
    """The named fix's replayed speedup with its range over steps ('bound only' without)."""
    return speed_text(o) if predicted(o) else "bound only"


def idle_gaps(run: Run, rank: int) -> pd.DataFrame:
    """GPU-idle stretches of one rank's steps with their host bucket (`start_us`, `end_us`,
    `bucket`), for the Timeline's idle bands."""
    return idle_segments(run.events, run.analysis.call_region, rank)
