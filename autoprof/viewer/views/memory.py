"""Memory: allocated and reserved bytes over time per device, with steps and regions marked and
the peak annotated; what was live at the peak; the regions and ops that allocate most."""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from autoprof.units import fmt_bytes
from autoprof.viewer._context import Context
from autoprof.viewer.views._common import current_run, readable

HOW_TO = ("This run has no memory events. Record them with `@autoprof(profile_memory=True)` "
          "(or `torch.profiler.profile(profile_memory=True)`): every allocation and free is "
          "then in the trace, and this page shows the peak, the timeline and who allocated it.")


def render(ctx: Context) -> None:
    run = current_run(ctx, "Memory")
    if run is None:
        return
    memory = run.analysis.memory
    if memory is None:
        st.info(HOW_TO)
        return
    devices = memory.devices
    labels = [f"{d} (rank {r})" if int(run.world_size or 1) > 1 else str(d)
              for r, d in zip(devices["rank"], devices["device"], strict=True)]
    default = max(range(len(labels)), key=lambda i: int(devices["peak_allocated_bytes"].iat[i]))
    pick = st.selectbox("Device", range(len(labels)), index=default,
                        format_func=lambda i: labels[i], key="memory_device")
    row = devices.iloc[int(pick)]
    rank, device = int(row["rank"]), str(row["device"])
    _headline(row)
    _timeline(memory, rank, device, row)
    _tables(memory, rank, device)


def _headline(row: pd.Series) -> None:
    cols = st.columns(3)
    cols[0].metric("Peak allocated", fmt_bytes(row["peak_allocated_bytes"]))
    cols[1].metric("Peak reserved", fmt_bytes(row["peak_reserved_bytes"]))
    capacity = row["capacity_bytes"]
    cols[2].metric("Device memory", fmt_bytes(capacity) if capacity is not None else "n/a")


def _timeline(memory: Any, rank: int, device: str, row: pd.Series) -> None:
    from autoprof.analysis.metrics.memory_use import plot_points

    tl = memory.timeline
    mine = plot_points(tl[(tl["rank"] == rank) & (tl["device"] == device)])
    marks = memory.marks[memory.marks["rank"] == rank].copy()
    origin = min([float(mine["ts_us"].min()), *marks["start_us"].astype(float)])
    reserved = row["peak_reserved_bytes"]  # None: the trace has no reserved totals
    unit, size = _unit(max(int(reserved or 0), int(row["peak_allocated_bytes"])))
    series = {"allocated": mine["allocated_bytes"]}
    if reserved is not None:
        series["reserved"] = mine["reserved_bytes"]
    long = pd.DataFrame({
        "t_ms": np.tile(mine["ts_us"].to_numpy(float) / 1e3 - origin / 1e3, len(series)),
        "size": np.concatenate([s.to_numpy() for s in series.values()]) / size,
        "bytes": np.concatenate([s.to_numpy() for s in series.values()]),
        "measure": np.repeat(list(series), len(mine)),
    })
    lines = alt.Chart(long).mark_line(interpolate="step-after").encode(
        x=alt.X("t_ms:Q", title="time since the first profiler step (ms)" if len(marks)
                else "time since the first memory event (ms)"),
        y=alt.Y("size:Q", title=unit),
        color=alt.Color("measure:N", title=None),
        tooltip=[alt.Tooltip("t_ms:Q", format=",.3f"), alt.Tooltip("bytes:Q", format=",")],
    )
    marks["start_ms"] = marks["start_us"] / 1e3 - origin / 1e3
    marks["end_ms"] = marks["end_us"] / 1e3 - origin / 1e3
    layers: list[Any] = []
    regions = marks[marks["kind"] == "region"]
    if len(regions):
        layers.append(alt.Chart(regions).mark_rect(opacity=0.12).encode(
            x="start_ms:Q", x2="end_ms:Q", color=alt.Color("name:N", title="region"),
            tooltip=["name:N"]))
    steps = marks[marks["kind"] == "step"]
    if len(steps):
        layers.append(alt.Chart(steps).mark_rule(strokeDash=[4, 3], color="gray").encode(
            x="start_ms:Q", tooltip=["name:N"]))
    peak = pd.DataFrame({"t_ms": [float(row["peak_ts_us"]) / 1e3 - origin / 1e3],
                         "size": [int(row["peak_allocated_bytes"]) / size],
                         "label": [f"peak {fmt_bytes(row['peak_allocated_bytes'])}"]})
    point = alt.Chart(peak).mark_point(color="red", size=80, filled=True).encode(
        x="t_ms:Q", y="size:Q")
    text = alt.Chart(peak).mark_text(align="left", dx=8, dy=-8, color="red").encode(
        x="t_ms:Q", y="size:Q", text="label:N")
    chart = alt.layer(*layers, lines, point, text).resolve_scale(color="independent")
    st.altair_chart(chart.properties(title=f"Memory on {device}", height=320), width="stretch")
    st.caption("Dashed lines: profiler steps. Shaded: the regions that allocate most.")


def _unit(largest: int) -> tuple[str, int]:
    """The binary unit the chart's axis counts in, picked so the largest value reads 1-1023."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if largest >= size:
            return unit, size
    return "bytes", 1


def _tables(memory: Any, rank: int, device: str) -> None:
    def mine(df: pd.DataFrame) -> pd.DataFrame:
        return df[(df["rank"] == rank) & (df["device"] == device)].drop(columns=["rank"])

    st.subheader("Live at the peak")
    st.dataframe(readable(mine(memory.live_at_peak)), hide_index=True, width="stretch")
    st.subheader("By region")
    st.dataframe(readable(mine(memory.by_region)), hide_index=True, width="stretch")
    st.subheader("Per step")
    st.dataframe(readable(mine(memory.steps)), hide_index=True, width="stretch")
    st.subheader("By op")
    st.dataframe(readable(mine(memory.by_op)), hide_index=True, width="stretch")
