"""The head of the Compare page: the diff of two chosen runs (``autoprof diff``): verdict,
confidence and the ranked causes. Draws only; every number comes from ``autoprof.analysis.diff``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from autoprof.analysis.diff import Diff, diff
from autoprof.analysis.diff.significance import noise_band
from autoprof.units import fmt_us
from autoprof.viewer._text import md_escape
from autoprof.viewer.views._common import readable


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _signed_us(value: float) -> str:
    return ("+" if value >= 0 else "-") + fmt_us(abs(value))


def _causes(rows: list[Any]) -> pd.DataFrame:
    """Times as text in the unit that reads best (the column names no unit: a ``_us`` name
    above ms values would misstate them); the share as what it is, against the step's change."""
    return readable(pd.DataFrame(
        [{"what": c.kind, "name": c.name, "A (mean per step)": fmt_us(c.a_us),
          "B (mean per step)": fmt_us(c.b_us), "change": _signed_us(c.delta_us),
          "against_step_change_pct": c.share_pct, "note": c.note}
         for c in rows]))


def _verdict(result: Diff) -> None:
    step = result.judged
    if step is None:
        st.warning("Not comparable: " + md_escape("; ".join(result.comparability.blocking)))
        return
    on_gpu = result.judged_on == "gpu_time"
    left, right = st.columns(2)
    left.metric("GPU time per step (B against A)" if on_gpu else "Step time (B against A)",
                md_escape(step.verdict), _pct(step.change_pct), delta_color="inverse")
    right.metric("95% interval of the change", f"{_pct(step.ci_low_pct)} .. "
                 f"{_pct(step.ci_high_pct)}")
    # the noise sentence once: a no-change reason already holds it
    detectable = ("" if step.min_detectable_pct is None or "noise" in step.reason else
                  f" {noise_band(step.min_detectable_pct).capitalize()} "
                  f"with these runs (between-run spread {step.between_run_pct or 0:.1f}%, "
                  f"from {step.between_run_source}).")
    st.caption(md_escape(f"{step.samples_a} vs {step.samples_b} steps (step time: the median; "
                         f"rows below: means per step); {step.reason}.{detectable} "
                         "Method: the median step's change; a bootstrap of each run's steps "
                         "plus the spread between runs (docs/diff.md)."))
    if on_gpu and result.step is not None:
        st.caption(md_escape(
            f"Judged on the GPU time per step: the step time's change "
            f"({_pct(result.step.change_pct)}) is within its noise, and the GPU's work, which "
            "the host's pace does not move, is most of the step."))
    for caveat in result.comparability.caveats:
        st.caption("Caveat: " + md_escape(caveat))


def render_diff(a: Any, b: Any, label_a: str, label_b: str) -> None:
    """The diff of run ``b`` against run ``a`` (the baseline)."""
    st.subheader("Diff")
    st.caption(md_escape(f"A = {label_a}   B = {label_b}"))
    result = diff(a, b)
    _verdict(result)
    if result.why:
        st.markdown("**Why** (per step, the ops that explain most of the change first)")
        st.dataframe(_causes(result.why), hide_index=True, width="stretch")
    moved = [c for c in result.buckets if c.delta_us]
    if moved:
        st.markdown("**Where the time moved** (the seven buckets, per step)")
        st.dataframe(_causes(moved), hide_index=True, width="stretch")
