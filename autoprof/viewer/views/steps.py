"""Steps and warm-up: per-step times, the untraced warm-up calls, the cold first step."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from autoprof.analysis import Run
from autoprof.analysis.analysis import record_of
from autoprof.units import fmt_us
from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer.views import watch
from autoprof.viewer.views._common import current_run, readable

FIRST = "first profiled step"
LATER = "later steps"


def render(ctx: Context) -> None:
    run = current_run(ctx, "Steps and warm-up")
    if run is None:
        return
    rank = None
    if run.world_size > 1:
        rank = int(st.selectbox("Rank", list(range(run.world_size)), key="steps_rank"))
    _steps(run.steps(rank=rank))
    _warmup(run)
    if ctx.current is not None:
        watch.render(ctx.current.path)


def _steps(steps: pd.DataFrame) -> None:
    st.subheader("Profiled steps")
    if not len(steps) or "step" not in steps.columns:
        st.info("No ProfilerStep markers in this trace: per-step times are not available.")
        return
    df = steps.sort_values("step").reset_index(drop=True)
    df["which"] = [FIRST if i == 0 else LATER for i in range(len(df))]
    if "cpu_span_us" in df.columns:
        first = float(df["cpu_span_us"].iloc[0])
        st.altair_chart(
            _charts.bars(df, "step", "cpu_span_us", "CPU time per profiled step",
                         "CPU span", color="which", x_title="profiled step", time_us=True),
            width="stretch",
        )
        later = df["cpu_span_us"].iloc[1:]
        if len(later):
            st.caption(f"First profiled step: {fmt_us(first)} of CPU time; the later steps: "
                       f"{fmt_us(float(later.min()))} to {fmt_us(float(later.max()))}.")
    gpu_cols = [c for c in ("gpu_work_us", "gpu_busy_us") if c in df.columns]
    if gpu_cols and float(df[gpu_cols].to_numpy().sum()) > 0:
        st.altair_chart(
            _charts.grouped_bars(df.assign(step=df["step"].astype(str)), "step", gpu_cols,
                                 [c.replace("_us", "").replace("_", " ") for c in gpu_cols],
                                 "GPU time per step", "time"),
            width="stretch",
        )
    st.dataframe(table(df.drop(columns=["which"])), hide_index=True, width="stretch")


def table(steps: pd.DataFrame) -> pd.DataFrame:
    """The steps table as shown: each step's start in ms after the first step's (the trace's
    own clock counts from an arbitrary origin, so its raw value means nothing to a reader),
    every other number in the unit its column names."""
    shown = steps.drop(columns=[c for c in ("start_us", "end_us") if c in steps.columns])
    out = readable(shown)
    if "start_us" in steps.columns and len(steps):
        start_ms = (steps["start_us"] - steps["start_us"].min()) / 1e3
        out.insert(min(2, len(out.columns)), "start (ms after the first step)",
                   [f"{v:,.2f}" for v in start_ms])
    return out


def _warmup(run: Run) -> None:
    st.subheader("Untraced calls before profiling")
    record = record_of(run)
    if record is None:
        st.info("No manifest: warm-up calls are only known for runs recorded by autoprof.")
        return
    warm = [float(c) for c in record.warmup_call_ms]
    wait = [float(c) for c in record.wait_call_ms]
    if not warm and not wait:
        st.write("This run made no timed calls before the profiler recorded.")
        return
    df = pd.DataFrame({
        "call": range(1, len(warm) + len(wait) + 1),
        "time_ms": warm + wait,
        "which": ["warm-up call"] * len(warm) + ["schedule wait step"] * len(wait),
    })
    st.altair_chart(
        _charts.bars(df, "call", "time_ms", "Wall time of each untraced warm-up and wait-step call",
                     "time (ms)", color="which", x_title="call"),
        width="stretch",
    )
    st.caption("Warm-up calls run before torch.profiler starts; schedule wait steps run under "
               "it but are not recorded. Both are timed with a device sync. The first call "
               "usually pays for lazy initialisation (CUDA context, kernel selection, "
               "allocator); that is why autoprof warms up before profiling.")

