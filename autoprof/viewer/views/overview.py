"""Overview: the verdict and its evidence, diagnostics with hints, the manifest."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from autoprof.units import fmt_pct, fmt_us, fmt_value
from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer._memo import analysed
from autoprof.viewer._text import md_escape
from autoprof.viewer.views import breakdown, roofline
from autoprof.viewer.views import whatif
from autoprof.viewer.views._common import call, current_run

_VERDICT_BOX = {"overhead-bound": st.warning, "compute-bound": st.success}
_SEVERITY_BOX = {"error": st.error, "warning": st.warning, "critical": st.error}


def render(ctx: Context) -> None:
    run = current_run(ctx, "Overview")
    if run is None:
        return
    verdict = call("Verdict", lambda: analysed(run, "verdict"))
    if verdict is not None:
        box = _VERDICT_BOX.get(str(verdict.kind), st.info)
        box(f"**{md_escape(verdict.kind)}**: {md_escape(verdict.reason)}")
    breakdown.show_opportunities(run)
    breakdown.show_breakdown(run)
    roofline.show_mfu(run)
    _evidence(run, verdict)
    _diagnostics(run)
    whatif.show_best(run)
    manifest = getattr(run, "manifest", None)
    with st.expander("Manifest", expanded=False):
        if manifest:
            st.json(manifest)
        else:
            st.write("No manifest: this is a plain torch.profiler trace, not an autoprof run.")


def _device(run: Any) -> str:
    """The device name as the manifest or the trace metadata states it."""
    manifest = getattr(run, "manifest", None) or {}
    dev = manifest.get("device")
    if isinstance(dev, dict) and dev.get("name"):
        return str(dev["name"])
    for meta in getattr(run, "trace_metadata", None) or []:
        props = meta.get("deviceProperties") if isinstance(meta, dict) else None
        if isinstance(props, list) and props and isinstance(props[0], dict):
            if props[0].get("name"):
                return str(props[0]["name"])
    return "CUDA GPU" if getattr(run, "is_cuda", False) else "CPU"


def _evidence(run: Any, verdict: Any) -> None:
    over = call("Overhead", lambda: analysed(run, "overhead"))
    n_steps = getattr(over, "steps", None)
    if n_steps is None:
        steps = call("Steps", lambda: analysed(run, "steps"))
        n_steps = None if steps is None else len(steps)
    cols = st.columns(5)
    if over is not None:
        cols[0].metric("Self CPU total", fmt_us(getattr(over, "self_cpu_us", None)))
        cols[1].metric("Self GPU total", fmt_us(getattr(over, "self_gpu_us", None)))
        cols[2].metric("GPU busy", fmt_pct(getattr(over, "gpu_busy_pct", None)))
    ranks = int(getattr(run, "world_size", 1) or 1)
    cols[3].metric("Profiled steps" + (f" (all {ranks} ranks)" if ranks > 1 else ""),
                   "n/a" if n_steps is None else f"{n_steps}")
    cols[4].text("Device")
    cols[4].text(_device(run))
    if over is not None:
        _balance_chart(over)
    evidence = dict(getattr(verdict, "evidence", None) or {})
    if evidence:
        rows = [(str(k), fmt_value(str(k), v)) for k, v in evidence.items()]
        with st.expander("Evidence behind the verdict", expanded=True):
            st.dataframe(pd.DataFrame(rows, columns=["measure", "value"]), hide_index=True)


def _balance_chart(over: Any) -> None:
    cpu, gpu = getattr(over, "self_cpu_us", None), getattr(over, "self_gpu_us", None)
    if cpu is None or gpu is None:
        return
    df = pd.DataFrame({"side": ["Self CPU", "Self GPU"], "time_us": [float(cpu), float(gpu)]})
    st.altair_chart(_charts.balance(df), width="stretch")


def _diagnostics(run: Any) -> None:
    st.subheader("Diagnostics")
    diags = call("Diagnostics", lambda: analysed(run, "diagnostics"))
    if diags is None:
        return
    if not diags:
        st.write("No findings.")
        return
    for d in diags:
        severity = str(getattr(d, "severity", "info"))
        box = _SEVERITY_BOX.get(severity, st.info)
        box(f"**{md_escape(getattr(d, 'id', ''))}** ({md_escape(severity)}): "
            f"{md_escape(getattr(d, 'message', ''))}")
        hint = getattr(d, "hint", "")
        if hint:
            st.caption(f"Hint: {md_escape(hint)}")
        evidence = getattr(d, "evidence", None)
        if evidence:
            st.expander("Evidence", expanded=False).dataframe(
                pd.DataFrame([(str(k), fmt_value(str(k), v)) for k, v in dict(evidence).items()],
                             columns=["measure", "value"]),
                hide_index=True,
            )

