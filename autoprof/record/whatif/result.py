"""One fix's measured outcome: the record whatif.json stores and the summary shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from autoprof.runfolder.whatif import classify as classify  # the interval rule's one home

# "no change" is only read from whatif.json files written before the interval rule
Status = Literal["faster", "slower", "cannot tell", "no change", "depends on inputs",
                 "outputs differ", "raised", "not applicable"]
DEPENDS: Final = "depends on inputs"  # faster only when the loop passes the same tensors each call
MEASURED = ("faster", "slower", "cannot tell", "no change", DEPENDS)  # carry a speedup
# a prediction with no stated interval further than 25% from the measured speedup is flagged
PREDICTION_MISS = 0.25


@dataclass
class FixResult:
    """``speedup`` is ``baseline_us / fixed_us``, None when the fix was not measured or changed
    the outputs (a fix that changes the answer is never called a speedup). ``speedup_low`` and
    ``speedup_high``: its 95% interval from the interleaved samples taken as pairs (the paired
    log-ratio t interval, ``ab.paired_ratio``); ``faster``/``slower`` only when the whole
    interval is on one side of 1, else ``cannot tell``, and ``settle`` says what would settle
    it (more samples, a quieter machine).
    ``setup_s``: the first call's time above a normal call (compilation, graph capture);
    ``break_even_calls``: calls after which the setup has paid for itself. ``harness_us``:
    the timing loop's own cost per call, measured beside the fix (an identity call timed the
    same way); it is inside both ``baseline_us`` and ``fixed_us`` and never subtracted.
    ``predicted_speedup``: the analysis's replayed prediction for this fix (None until the
    analysis provides one) and ``predicted_low``/``predicted_high`` the interval it states a
    measured gain is expected in (the summary's ``predicted_interval``);
    ``prediction_error_pct`` is (predicted - measured) / measured and ``prediction_missed``
    is True when the measured speedup lies outside that interval (a prediction without one:
    an error beyond ``PREDICTION_MISS``).
    ``same_inputs_*``: a fix whose timed call copies each call's inputs in (a CUDA graph's
    static inputs) is also timed on the very inputs it was prepared with, no copy, as a loop
    that passes the same tensors each call runs it (``Applied.same_inputs_call``), interleaved
    with the others: its time, speedup over the same original samples, the paired 95%
    interval and what that interval says on its own. ``speedup`` stays the inputs-copied
    number; ``status`` is ``loop_status`` of the two."""

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
    harness_us: float | None = None
    predicted_speedup: float | None = None
    predicted_low: float | None = None
    predicted_high: float | None = None
    prediction_error_pct: float | None = None
    prediction_missed: bool | None = None
    fixed_verdict: str | None = None
    fixed_verdict_reason: str | None = None
    fixed_run: str | None = None
    settle: str | None = None  # what would settle a "cannot tell"
    suggested_by: list[str] | None = None  # the run's findings that pointed at this fix
    same_inputs_us: float | None = None
    same_inputs_spread_us: float | None = None
    same_inputs_speedup: float | None = None
    same_inputs_speedup_low: float | None = None
    same_inputs_speedup_high: float | None = None
    same_inputs_status: Status | None = None  # classify() of the same-inputs interval
    same_inputs_prediction_error_pct: float | None = None  # the prediction against it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def set_prediction(self, predicted: float | None,
                       interval: tuple[float, float] | None = None) -> None:
        """Record the replayed prediction, its stated interval (low, high) and how far it is
        from what was measured (the ``speedup``, or the time ratio when the outputs differ;
        ``prediction_missed`` judges that one), and from the same-inputs speedup when there
        is one."""
        self.predicted_speedup = predicted
        self.predicted_low, self.predicted_high = interval or (None, None)
        measured = self.speedup if self.speedup is not None else self.measured_speedup
        self.prediction_error_pct, self.prediction_missed = prediction_check(
            predicted, measured, interval)
        self.same_inputs_prediction_error_pct = prediction_check(
            predicted, self.same_inputs_speedup)[0]


def prediction_check(predicted: float | None, measured: float | None,
                     interval: tuple[float, float] | None = None
                     ) -> tuple[float | None, bool | None]:
    """``(error_pct, missed)``: the prediction's signed error relative to the measured speedup
    and whether the measured speedup lies outside the prediction's stated ``interval``
    (low, high), or, without one, whether the error exceeds ``PREDICTION_MISS``;
    ``(None, None)`` when either number is missing."""
    if predicted is None or measured is None or measured <= 0:
        return None, None
    error = (predicted - measured) / measured
    if interval is not None:
        low, high = interval
        return error * 100.0, not low <= measured <= high
    return error * 100.0, abs(error) > PREDICTION_MISS


def loop_status(copied: Status, same_inputs: Status | None) -> Status:
    """The status of a fix timed two ways: the inputs-copied call's (the loop that passes new
    tensors each call), except that a fix measured ``faster`` only on the same inputs is
    ``depends on inputs``, never ``slower`` or ``cannot tell``.

    | copied in   | same inputs  | status            |
    | ----------- | ------------ | ----------------- |
    | slower      | faster       | depends on inputs |
    | cannot tell | faster       | depends on inputs |
    | faster      | (any)        | faster            |
    | slower      | cannot tell  | slower            |

    Any other status (outputs differ, raised) stands as it is."""
    if same_inputs == "faster" and copied in ("slower", "cannot tell"):
        return DEPENDS
    return copied


def break_even(setup_s: float, baseline_us: float, fixed_us: float) -> int | None:
    saved_us = baseline_us - fixed_us
    if saved_us <= 0:
        return None
    return max(1, int(-(-setup_s * 1e6 // saved_us)))
