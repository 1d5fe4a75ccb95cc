"""Roofline: each kernel's achieved TFLOP/s against its arithmetic intensity on log-log
axes, under the device's roof (bandwidth slope, then the compute ceiling), and the table."""

from __future__ import annotations

from typing import Any

import altair as alt
import streamlit as st

from autoprof.analysis import Run
from autoprof.analysis.metrics.efficiency import Efficiency
from autoprof.analysis.metrics.roofline import roof_lines
from autoprof.units import fmt_pct, fmt_value
from autoprof.viewer._context import Context
from autoprof.viewer._text import md_escape
from autoprof.viewer.views._common import current_run, readable

_BOUND_COLORS = alt.Scale(domain=["compute", "memory"], range=["#f58518", "#4c78a8"])


def efficiency_of(run: Run) -> Efficiency:
    return run.analysis.efficiency


def render(ctx: Context) -> None:
    run = current_run(ctx, "Roofline")
    if run is None:
        return
    eff = efficiency_of(run)
    if eff.kernels.empty:
        st.info("No GPU work in this run: the roofline needs kernels.")
        return
    roof = eff.peak.for_dtype(eff.dtype or "")
    cols = st.columns(4)
    cols[0].metric("Device", md_escape(eff.device or "unknown"))
    cols[1].metric("TFLOP/s per step", fmt_value("tflops", eff.step_tflops))
    cols[2].metric(f"MFU ({md_escape(eff.dtype or 'n/a')} peak {fmt_value('tflops', roof)})",
                   fmt_pct(eff.mfu_pct))
    cols[3].metric("GPU time at ≥ 50% of roofline", fmt_pct(eff.at_half_peak_pct))
    for note in eff.notes:
        st.info(md_escape(note))
    chart = roofline_chart(eff)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    if eff.peak.source:
        peaks = ", ".join(f"{d} {fmt_value('tflops', t)}" for d, t in eff.peak.tflops.items())
        st.caption(f"Dashed: the roof of each dtype the kernels ran in. Device peaks (TFLOP/s): "
                   f"{md_escape(peaks)}; bandwidth {fmt_value('gbps', eff.peak.gbps)} GB/s. "
                   f"Source: {md_escape(eff.peak.source)}")
    st.subheader("Kernels (grouped by name, most GPU time first)")
    st.dataframe(readable(eff.kernels), hide_index=True, width="stretch",
                 column_config=_config())
    far = eff.far_from_roofline()
    if len(far):
        st.subheader("Farthest from the roofline (GPU time × (1 − efficiency))")
        st.dataframe(readable(far[["name", "gpu_us", "pct_of_roofline", "lost_us", "bound"]]),
                     hide_index=True, width="stretch", column_config=_config())
    st.subheader("By launching op")
    st.dataframe(readable(eff.ops), hide_index=True, width="stretch", column_config=_config())


def roofline_chart(eff: Efficiency) -> alt.LayerChart | alt.FacetChart | alt.Chart | None:
    """Kernels as points (size: GPU time, color: bound) under the roof (dashed) of each dtype
    they ran in."""
    k = eff.kernels
    pts = k[(k["intensity"].astype(float) > 0) & (k["tflops"].astype(float) > 0)].copy()
    if pts.empty:
        st.caption("No kernel has both FLOPs and bytes, so none can be placed on the roofline.")
        return None
    pts["kernel"] = pts["name"].astype(str).str.slice(0, 80)
    pts["bound"] = pts["bound"].fillna("unknown")
    shown = pts[["kernel", "intensity", "tflops", "gpu_us", "bound", "dtype"]]
    log = alt.Scale(type="log")
    points: alt.Chart = alt.Chart(shown).mark_circle(opacity=0.8).encode(
        x=alt.X("intensity:Q", scale=log, title="arithmetic intensity (FLOP/byte)"),
        y=alt.Y("tflops:Q", scale=log, title="achieved TFLOP/s"),
        size=alt.Size("gpu_us:Q", title="GPU time (µs)"),
        color=alt.Color("bound:N", scale=_BOUND_COLORS, title="bound"),
        tooltip=["kernel", "dtype", "bound", alt.Tooltip("tflops:Q", format=".4g"),
                 alt.Tooltip("intensity:Q", format=".4g"), alt.Tooltip("gpu_us:Q", format=".1f")],
    )
    roofs = roof_lines(eff)
    if roofs.empty:
        st.caption("No peak figures for this device: the roof is not drawn.")
        return points
    line = alt.Chart(roofs).mark_line(strokeDash=[4, 2]).encode(
        x="intensity:Q", y="tflops:Q",
        strokeOpacity=alt.value(0.7),
        detail="roof:N",
        color=alt.value("#555"),
        tooltip=["roof"])
    return alt.layer(line, points)


def _config() -> dict[str, Any]:
    """Column labels (the cells are text already: numbers formatted by `readable`)."""
    labels = {"gpu_us": "GPU time", "lost_us": "lost", "tflops": "TFLOP/s", "gbps": "GB/s",
              "pct_of_peak_flops": "% of peak FLOP/s", "pct_of_peak_bw": "% of peak bandwidth",
              "pct_of_roofline": "% of roofline", "intensity": "FLOP/byte", "flops": "FLOPs"}
    cfg: dict[str, Any] = {"name": st.column_config.TextColumn("name", width="large")}
    for col, label in labels.items():
        cfg[col] = st.column_config.TextColumn(label)
    return cfg


def show_mfu(run: Run) -> None:
    """One line for the Overview: MFU and TFLOP/s per step (nothing for runs without FLOPs)."""
    eff = efficiency_of(run)
    if eff.step_tflops is None:
        return
    st.caption(f"MFU {fmt_pct(eff.mfu_pct)} ({fmt_value('tflops', eff.step_tflops)} TFLOP/s "
               f"per step against the {md_escape(eff.dtype or '')} peak of "
               f"{md_escape(eff.device or 'an unknown device')}); see the Roofline page.")
