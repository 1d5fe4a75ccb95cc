"""One fix's measured outcome: the record whatif.json stores and the summary shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["faster", "slower", "no change", "outputs differ", "raised", "not applicable"]
NOISE = 0.05  # a speedup within 5% of 1, or with overlapping quartiles, is "no change"


@dataclass
class FixResult:
    """``speedup`` is ``baseline_us / fixed_us``, None when the fix was not measured or changed
    the outputs (a fix that changes the answer is never called a speedup). ``speedup_low`` and
    ``speedup_high`` pair the quartiles (baseline p25 / fixed p75, baseline p75 / fixed p25).
    ``setup_s``: the first call's time above a normal call (compilation, graph capture);
    ``break_even_calls``: calls after which the setup has paid for itself."""

    fix: str
    doc: str
    applicable: bool
    status: Status
    reason: str | None = None
    error: str | None = None
    baseline_us: float | None = None
    baseline_spread_us: float | None = None
    fixed_us: float | None = None
    fixed_spread_us: float | None = None
    measured_speedup: float | None = None
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    outputs_match: bool | None = None
    max_abs_error: float | None = None
    tolerance: float | None = None
    mismatch: str | None = None
    setup_s: float | None = None
    break_even_calls: int | None = None
    samples: int | None = None
    calls_per_sample: int | None = None
    clock: str | None = None
    fixed_verdict: str | None = None
    fixed_verdict_reason: str | None = None
    fixed_run: str | None = None
    suggested_by: list[str] | None = None  # the run's findings that pointed at this fix

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def classify(speedup: float, low: float, high: float) -> Status:
    """faster / slower only when the quartile ranges do not overlap and the change is > NOISE."""
    if speedup >= 1 + NOISE and low > 1:
        return "faster"
    if speedup <= 1 - NOISE and high < 1:
        return "slower"
    return "no change"


def break_even(setup_s: float, baseline_us: float, fixed_us: float) -> int | None:
    saved_us = baseline_us - fixed_us
    if saved_us <= 0:
        return None
    return max(1, int(-(-setup_s * 1e6 // saved_us)))
