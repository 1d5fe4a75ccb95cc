"""What-if: the fixes autoprof.check(..., try_fixes=...) measured on the function: a bar per
fix (speedup, with the interquartile band) and the table of every result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from autoprof.analysis import Run
from autoprof.analysis.kinds import MEASURED_FIX_NAMES, OTHER_STATUS_COLOUR, WHATIF_STATUS_COLOURS
from autoprof.analysis.loader.whatif import NUMBERS as LOADER_NUMBERS
from autoprof.analysis.loader.whatif import best_fix, measured_for, whatif_problem
from autoprof.analysis.report.whatif_text import (
    missed_because,
    whatif_depends,
    whatif_label,
    whatif_same_inputs,
    whatif_status,
)
from autoprof.units import fmt_us
from autoprof.viewer._context import Context
from autoprof.viewer._text import md_escape
from autoprof.viewer.views._common import current_run, show_error

HOW = ("No fixes were tried for this run. Measure them on your function with "
       "`autoprof.check(fn, *args, try_fixes=\"auto\")` (or a tuple of fix names: "
       f"{', '.join(MEASURED_FIX_NAMES)}).")


NUMBERS = LOADER_NUMBERS


def results_of(run: Run) -> list[dict[str, Any]]:
    return list(run.analysis.whatif)


def garbled(results: list[dict[str, Any]]) -> str | None:
    """The first field of the what-if records that should be a number and is not, as one
    line naming the fix, the field and its value; None when every one is a number or
    missing. Such a record is not drawn: a traceback would be all the page could show."""
    for r in results:
        for key in NUMBERS:
            value = r.get(key)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, int | float)):
                return (f"whatif.json: fix {str(r.get('fix'))[:80]!r}: {key} is "
                        f"{str(value)[:80]!r}, not a number")
    return None


def best_line(run: Run) -> str | None:
    """One sentence naming the best measured fix, for the Overview; None when there is none."""
    results = results_of(run)
    if garbled(results):
        return None
    best = best_fix(results)
    depends = "".join(f" Depends on your loop: {md_escape(line)}."
                      for line in whatif_depends(results))
    if best is None:
        return ("No fix tried was measured faster with matching outputs." + depends
                if results else None)
    outputs = "outputs match" if best.get("outputs_match") else "outputs not compared"
    return (f"Best measured fix: **{md_escape(best['fix'])}**, {float(best['speedup']):.2f}x "
            f"faster ({fmt_us(best.get('baseline_us'))} -> {fmt_us(best.get('fixed_us'))} per "
            f"call, {outputs}).{depends} See the What-if page.")


def render(ctx: Context) -> None:
    run = current_run(ctx, "What-if")
    if run is None:
        return
    problem = whatif_problem(getattr(run, "path", None))  # the loader's one line
    if problem:
        show_error("The what-if results of this run could not be read.", problem)
        return
    results = results_of(run)
    if not results:
        st.info(HOW)
        return
    line = best_line(run)
    if line:
        st.success(line)
    measured = [r for r in results if r.get("fixed_us") is not None]
    if measured:
        st.altair_chart(speedup_chart(_chart_frame(measured)), width="stretch")
        st.caption("Speedup = the original's median time per call / the fix's, both measured "
                   "untraced, warmed up and synchronised, their samples taken in turn; the band "
                   "is its 95% interval. A fix whose outputs differ is never counted as a "
                   "speedup (its bar shows the time ratio only). A CUDA graph's bar is its "
                   "time with each call's inputs copied in; the table's 'same inputs (no copy)' "
                   "is its speedup when the loop passes the same tensors each call.")
    st.dataframe(_table(results), hide_index=True, width="stretch")
    for r in results:
        if r.get("fixed_run"):
            st.caption(md_escape(f"{r['fix']} was profiled too: "
                                 f"{Path(str(getattr(run, 'path', ''))) / str(r['fixed_run'])}"
                                 " (open it by path in the sidebar)."))


def _chart_frame(measured: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame({
        "fix": [str(r["fix"]) for r in measured],
        "speedup": [float(r.get("speedup") or r.get("measured_speedup") or 0.0)
                    for r in measured],
        "low": [r.get("speedup_low") for r in measured],
        "high": [r.get("speedup_high") for r in measured],
        "status": [whatif_status(r) for r in measured],
    })


def speedup_chart(df: pd.DataFrame) -> alt.LayerChart | alt.FacetChart:
    """Bars of `speedup` per `fix` colored by `status`, a `low`-`high` rule, a line at 1x."""
    statuses = sorted(set(df["status"]))
    colours = [WHATIF_STATUS_COLOURS.get(s, OTHER_STATUS_COLOUR) for s in statuses]
    color = alt.Color("status:N", title=None, scale=alt.Scale(domain=statuses, range=colours))
    base = alt.Chart(df).encode(y=alt.Y("fix:N", title=None, sort=None))
    bars = base.mark_bar().encode(
        x=alt.X("speedup:Q", title="speedup (x, original time / fixed time)"), color=color,
        tooltip=[alt.Tooltip("fix:N"), alt.Tooltip("status:N"),
                 alt.Tooltip("speedup:Q", format=".2f"), alt.Tooltip("low:Q", format=".2f"),
                 alt.Tooltip("high:Q", format=".2f")])
    band = base.transform_filter("isValid(datum.low)").mark_rule(color="black").encode(
        x="low:Q", x2="high:Q")
    one = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    return alt.layer(bars, band, one).properties(title="Measured speedup per fix")


def _table(results: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in results:
        setup = r.get("setup_s")
        rows.append({
            "fix": r.get("fix"),
            "result": whatif_status(r),
            "speedup": None if r.get("speedup") is None else round(float(r["speedup"]), 2),
            "same inputs (no copy)": whatif_same_inputs(r),
            "predicted": None if r.get("predicted_speedup") is None else
            round(float(r["predicted_speedup"]), 2),
            "prediction": _prediction(r),
            "original": fmt_us(r.get("baseline_us")),
            "fixed": fmt_us(r.get("fixed_us")),
            "fixed, same inputs": fmt_us(r.get("same_inputs_us"))
            if r.get("same_inputs_us") is not None else "",
            "outputs match": r.get("outputs_match"),
            "max abs error": r.get("max_abs_error"),
            "setup": fmt_us(setup * 1e6) if isinstance(setup, int | float) else "n/a",
            "break-even calls": r.get("break_even_calls"),
            "profiled with the fix": r.get("fixed_verdict"),
            "reason": r.get("reason") or "",
            "what it does": r.get("doc") or "",
        })
    return pd.DataFrame(rows)


def _prediction(r: dict[str, Any]) -> str:
    """The replayed prediction against the measurement: its error, and 'missed' where the
    measured speedup lies outside the prediction's stated interval (without one: beyond 25%)."""
    err, same = r.get("prediction_error_pct"), r.get("same_inputs_prediction_error_pct")
    if not isinstance(err, int | float):
        return ""
    text = (f"missed ({err:+.0f}%, {missed_because(r)})" if r.get("prediction_missed")
            else f"{err:+.0f}%")
    return text + (f"; same inputs {same:+.0f}%" if isinstance(same, int | float) else "")


def show_best(run: Run) -> None:
    """The Overview's line naming the best measured fix, and what the fixes each finding
    suggested measured (nothing when no fix was tried)."""
    line = best_line(run)
    if not line:
        return
    st.info(line)
    results = results_of(run)
    findings = dict.fromkeys(f for r in results for f in r.get("suggested_by") or [])
    for finding in findings:
        outcomes = "; ".join(f"{r['fix']}: {_outcome(r)}" for r in measured_for(results, finding))
        st.caption(md_escape(f"{finding} suggested {outcomes}"))


def _outcome(r: dict[str, Any]) -> str:
    return whatif_label(r)
