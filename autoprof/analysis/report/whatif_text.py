"""A what-if fix's outcome as text, one home for the report and the viewer.

The status comes from the speedup's 95% interval (faster / slower only when it is on one side
of 1, else cannot tell with what would settle it). Files written before that rule said
'no change' and held quartile ratios where the interval now is: they read 'cannot tell' and
their band is named for what it is. A fix timed both with each call's inputs copied in and on
the same inputs (a CUDA graph) names both numbers, and which loop each applies to
(``runfolder.whatif.same_inputs_note``); its status is 'depends on inputs' when only the
same-inputs call is faster.
"""

from __future__ import annotations

from typing import Any

from autoprof.runfolder.whatif import same_inputs_note

_MEASURED = ("faster", "slower", "cannot tell", "no change", "depends on inputs")


def whatif_status(r: dict[str, Any]) -> str:
    """A what-if record's status as shown: an older file's 'no change' reads 'cannot tell'."""
    return "cannot tell" if r.get("status") == "no change" else str(r.get("status"))


def whatif_band(r: dict[str, Any]) -> str:
    """' (95% CI 1.40-1.66x)' from the speedup's interval; a file written before the interval
    rule (no ``settle`` key) held quartile ratios there, and says so."""
    low, high = r.get("speedup_low"), r.get("speedup_high")
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return ""
    name = "95% CI" if "settle" in r else "quartile ratios, an older file: no interval"
    return f" ({name} {low:.2f}-{high:.2f}x)"


def whatif_same_inputs(r: dict[str, Any]) -> str:
    """'4.80x (95% CI 4.61-5.02x)': the speedup on the same inputs (no copy), '' without one."""
    same, low, high = (r.get(k) for k in ("same_inputs_speedup", "same_inputs_speedup_low",
                                          "same_inputs_speedup_high"))
    if not isinstance(same, int | float):
        return ""
    band = (f" (95% CI {low:.2f}-{high:.2f}x)"
            if isinstance(low, int | float) and isinstance(high, int | float) else "")
    return f"{same:.2f}x{band}"


def _measured_label(r: dict[str, Any]) -> str:
    """'faster, 1.52x (95% CI 1.40-1.66x)'; an old file's 'no change' reads 'cannot tell';
    a fix timed on the same inputs too: 'depends on inputs: slower, 0.92x (...), when each
    call's inputs are copied in; faster, 4.80x (...), when the loop passes the same tensors
    each call (no copy)'."""
    status = whatif_status(r)
    both = same_inputs_note(r)
    text = f"{status}: {both}" if both else f"{status}, {r['speedup']:.2f}x{whatif_band(r)}"
    return text + (f"; {r['settle']}" if status == "cannot tell" and r.get("settle") else "")


def whatif_label(r: dict[str, Any]) -> str:
    """One fix's outcome without the outputs: the measured label, or 'status (reason)'."""
    if r.get("status") in _MEASURED and r.get("speedup") is not None:
        return _measured_label(r)
    return f"{r.get('status')} ({r.get('reason') or ''})"


def whatif_outcome(r: dict[str, Any]) -> str:
    """One fix's outcome in one line: the measured label and whether outputs matched, or
    the status and its reason."""
    status = r.get("status")
    if status in _MEASURED and r.get("speedup") is not None:
        compared = "outputs match" if r.get("outputs_match") else "outputs not compared"
        return f"{_measured_label(r)}, {compared}"
    return f"{status}: {r.get('reason') or ''}".rstrip(": ")


def whatif_depends(results: list[dict[str, Any]]) -> list[str]:
    """'cuda-graph: slower, 0.92x (...), when each call's inputs are copied in; faster, 4.80x
    (...), when the loop passes the same tensors each call (no copy)', one per fix whose
    status is 'depends on inputs' (never a best measured fix, whose speedup must hold for
    any loop)."""
    return [f"{r.get('fix')}: {same_inputs_note(r)}" for r in results
            if r.get("status") == "depends on inputs" and same_inputs_note(r)]


def missed_because(r: dict[str, Any]) -> str:
    """Why a prediction missed: the measured speedup outside the interval it stated, or (a
    prediction stated without one) over 25% off."""
    low, high = r.get("predicted_low"), r.get("predicted_high")
    if isinstance(low, int | float) and isinstance(high, int | float):
        return f"measured outside its interval {low:.2f}-{high:.2f}x"
    return "over 25% off"
