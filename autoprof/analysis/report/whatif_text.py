"""A what-if fix's outcome as text, one home for the report and the viewer.

The status comes from the speedup's 95% interval (faster / slower only when it is on one side
of 1, else cannot tell with what would settle it). Files written before that rule said
'no change' and held quartile ratios where the interval now is: they read 'cannot tell' and
their band is named for what it is.
"""

from __future__ import annotations

from typing import Any

_MEASURED = ("faster", "slower", "cannot tell", "no change")


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


def _measured_label(r: dict[str, Any]) -> str:
    """'faster, 1.52x (95% CI 1.40-1.66x)'; an old file's 'no change' reads 'cannot tell'."""
    status = whatif_status(r)
    text = f"{status}, {r['speedup']:.2f}x{whatif_band(r)}"
    return text + (f"; {r['settle']}" if status == "cannot tell" and r.get("settle") else "")


def whatif_outcome(r: dict[str, Any]) -> str:
    """One fix's outcome in one line: the measured label and whether outputs matched, or
    the status and its reason."""
    status = r.get("status")
    if status in _MEASURED and r.get("speedup") is not None:
        compared = "outputs match" if r.get("outputs_match") else "outputs not compared"
        return f"{_measured_label(r)}, {compared}"
    return f"{status}: {r.get('reason') or ''}".rstrip(": ")
