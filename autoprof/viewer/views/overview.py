"""Overview: the verdict, its reason and the top findings on the first screen; then the
numbers behind them, every diagnostic with its hint and evidence, the manifest."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from autoprof.analysis import Run
from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.kinds import VERDICT_TONE
from autoprof.analysis.metrics.ranks import ORDER_TEXT
from autoprof.analysis.report.model.base import given
from autoprof.analysis.report.text import untraced_between_clause
from autoprof.analysis.scale.reduce import RunAnswer
from autoprof.units import fmt_pct, fmt_us, fmt_value
from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer._text import md_escape
from autoprof.viewer.views import breakdown, roofline, watch, whatif
from autoprof.viewer.views._common import current_run, dash, device_name, readable

_TONE_BOX = {"warning": st.warning, "success": st.success}
_SEVERITY_BOX = {"error": st.error, "warning": st.warning, "critical": st.error}
_SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2, "info": 3}
TOP_FINDINGS = 3  # diagnostics shown on the first screen, most severe first


def render(ctx: Context) -> None:
    run = current_run(ctx, "Overview", ranks=_rank_by_rank)
    if run is None:
        return
    watch.comparison(run)  # a triggered window leads with its comparison (else nothing)
    verdict = run.analysis.verdict
    box = _TONE_BOX.get(VERDICT_TONE[verdict.kind], st.info)
    box(f"**{md_escape(verdict.kind)}**: {md_escape(verdict.reason)}")
    diags = ranked(run.analysis.diagnostics)
    _top_findings([d for d in diags if d.id != verdict.kind][:TOP_FINDINGS])
    breakdown.show_opportunities(run)
    breakdown.show_breakdown(run)
    _between_calls(run)
    _numbers(run)
    roofline.show_mfu(run)
    _balance_chart(run)
    whatif.show_best(run)
    _all_diagnostics(diags)
    if verdict.evidence:
        rows = [(str(k), fmt_value(str(k), v)) for k, v in verdict.evidence.items()]
        with st.expander("Evidence behind the verdict", expanded=False):
            st.dataframe(pd.DataFrame(rows, columns=["measure", "value"]), hide_index=True)
    with st.expander("Manifest", expanded=False):
        if run.manifest:
            st.json(run.manifest)
        else:
            st.write("No manifest: this is a plain torch.profiler trace, not an autoprof run.")


def _rank_by_rank(answer: RunAnswer) -> None:
    """A run analysed rank by rank, from its report (``Report`` with its ``rank_by_rank``
    section): the verdict over every rank's mean step, the straggler, where the time goes,
    the slowest ranks and the ranks' verdicts; the Ranks page has the heatmaps."""
    report = answer.report()
    section = given(report.rank_by_rank)
    box = _TONE_BOX.get(VERDICT_TONE[report.verdict], st.info)
    box(f"**{md_escape(report.verdict)}**: {md_escape(report.verdict_reason)}")
    if report.straggler_rank is None:
        st.info("No straggler: the ranks are balanced, or never meet in collectives.")
    else:
        st.error(f"Straggler: rank {report.straggler_rank} (the other ranks wait for it). "
                 "The Ranks page shows every rank's buckets and steps.")
    bd = report.breakdown
    st.write(md_escape(
        f"{report.world_size} ranks, {report.events:,} events, analysed rank by rank: mean "
        f"step {fmt_us(given(bd.step_us))} over {given(bd.steps) or 0} steps of every rank."))
    pct = given(bd.buckets_pct) or {}
    us = given(bd.buckets_us) or {}
    buckets = pd.DataFrame({"bucket": list(pct), "share_pct": list(pct.values()),
                            "per_step_us": [us.get(b) for b in pct]})
    st.subheader("Where the time goes")
    st.dataframe(readable(buckets.sort_values("share_pct", ascending=False)),
                 hide_index=True, width="stretch")
    if section is None:
        return
    st.subheader("Slowest ranks")
    st.caption(f"Ordered {ORDER_TEXT.get(section.worst_by, section.worst_by)}: the "
               "straggler's rule, so a straggler comes first. z: the median step's distance "
               "from the ranks' median in MADs.")
    worst = pd.DataFrame([w.to_dict() for w in section.worst_ranks])
    st.dataframe(readable(worst), hide_index=True, width="stretch")
    st.write(md_escape("Verdicts: " + ", ".join(f"{k} {v}" for k, v in
                                                sorted(section.verdicts.items()))))
    if section.warnings:
        with st.expander(f"Warnings ({len(section.warnings)})", expanded=False):
            st.code("\n".join(section.warnings[:50]), language=None)


def _between_calls(run: Run) -> None:
    """Under the breakdown: how much of each step passes between calls (the caller's loop,
    with the GPU idle), where, and autoprof's own time left out of the steps."""
    bd = run.analysis.breakdown.mean()
    us = bd.get("between_calls_us")
    if not isinstance(us, float):
        return
    where = ", ".join(f"{w['name']} {fmt_us(w['us_per_step'])}"
                      for w in bd.get("between_calls_where") or [])  # type: ignore[attr-defined]
    st.caption(md_escape(
        f"Between calls (the caller's loop, GPU idle): {fmt_us(us)} per step "
        f"({fmt_pct(bd.get('between_calls_pct'))} of the step)"  # type: ignore[arg-type]
        + (f", in {where}" if where else "")
        + untraced_between_clause(us, run.analysis.between_calls_untraced_us)
        + f"; autoprof's own {fmt_us(bd.get('autoprof_us'))} per step is left out."))  # type: ignore[arg-type]


def ranked(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Most severe first; the analysis's order within one severity."""
    return sorted(diags, key=lambda d: _SEVERITY_ORDER.get(d.severity, 9))


def _top_findings(top: list[Diagnostic]) -> None:
    for d in top:
        text = f"**{md_escape(d.id)}**: {md_escape(d.message)}"
        if d.hint:
            text += f"  \n*Hint: {md_escape(d.hint)}*"
        _SEVERITY_BOX.get(d.severity, st.info)(text)


def _numbers(run: Run) -> None:
    over = run.analysis.overhead
    ranks = run.world_size
    cols = st.columns(6)
    cols[0].metric("Step (CPU, median)", dash(fmt_us(over.step_cpu_span_us_median)))
    cols[1].metric("GPU busy", dash(fmt_pct(over.gpu_busy_pct)) if run.is_cuda else "—")
    cols[2].metric("Self CPU total", dash(fmt_us(over.self_cpu_us)))
    cols[3].metric("Self GPU total", dash(fmt_us(over.self_gpu_us)) if run.is_cuda else "—")
    cols[4].metric("Profiled steps" + (f" (all {ranks} ranks)" if ranks > 1 else ""),
                   f"{over.steps}" if over.steps else "—")
    cols[5].text("Device")
    cols[5].text(device_name(run))


def _balance_chart(run: Run) -> None:
    over = run.analysis.overhead
    df = pd.DataFrame({"side": ["Self CPU", "Self GPU"],
                       "time_us": [float(over.self_cpu_us), float(over.self_gpu_us)]})
    st.altair_chart(_charts.balance(df), width="stretch")


def _all_diagnostics(diags: list[Diagnostic]) -> None:
    title = f"All {len(diags)} diagnostics, with hints and evidence" if diags else "Diagnostics"
    with st.expander(title, expanded=False):
        if not diags:
            st.write("No findings.")
        for d in diags:
            box = _SEVERITY_BOX.get(d.severity, st.info)
            box(f"**{md_escape(d.id)}** ({md_escape(d.severity)}): {md_escape(d.message)}")
            if d.hint:
                st.caption(f"Hint: {md_escape(d.hint)}")
            if d.evidence:
                st.dataframe(
                    pd.DataFrame([(str(k), fmt_value(str(k), v)) for k, v in d.evidence.items()],
                                 columns=["measure", "value"]),
                    hide_index=True,
                )
