"""Trying fixes on the user's call: the original and each fix measured the same way.

Every trial runs on fresh copies of the arguments inside :func:`user_state_kept`, so the
user's inputs, grad mode and RNG state are as they were afterwards. A fix that raises
(anything but KeyboardInterrupt, SystemExit included) is a result (``status="raised"``); a fix
whose outputs differ is reported as such, never as a speedup.

What is timed is the fix called as a user calls it (``Applied.bind``), beside the original and
an identity call through the same closure: the identity's time is the harness's own cost per
call (``harness_us``), reported, inside every time, never subtracted. A fix that copies each
call's inputs in also has its call on the very inputs it was prepared with timed in the same
rounds (``Applied.bind_same_inputs``): the ``same_inputs_*`` fields, and ``loop_status``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from autoprof.record.whatif.ab import Interval, paired_ratio, settle_text
from autoprof.record.whatif.call import Args, Call
from autoprof.record.whatif.compare import Comparison, compare_outputs
from autoprof.record.whatif.fixes import FIXES, Applied, Fix, NotApplicable
from autoprof.record.whatif.fixes.base import first_line
from autoprof.record.whatif.guard import seeded, user_state_kept
from autoprof.record.whatif.harness import (
    DEFAULT_SAMPLES,
    Timing,
    measure_interleaved,
    timed_call,
)
from autoprof.record.whatif.result import (
    DEPENDS,
    FixResult,
    break_even,
    classify,
    loop_status,
)
from autoprof.runfolder.whatif import same_inputs_note


@dataclass
class Trial:
    """A result plus, while it is alive, the fixed callable and its prepared inputs (to profile
    the best fix)."""

    result: FixResult
    applied: Applied | None = None
    inputs: Args | None = None


def _identity(*args: Any, **kwargs: Any) -> None:
    """What the harness costs per call: a call through the same closure that does nothing."""


def bound(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[
        [], Any]:
    """``fn`` on these arguments as the zero-argument call the harness times."""
    return lambda: fn(*args, **kwargs)


def measure_baseline(call: Call, samples: int = DEFAULT_SAMPLES) -> Timing:
    """The original function on fresh inputs; also sets ``call.reference`` (seeded output),
    ``call.not_compared`` when a second seeded call disagrees with the first (the function
    updates state, like a training step, or is nondeterministic) or the outputs cannot be
    compared, and
    ``call.draws_random`` when a call on another seed gives other outputs (it draws random
    numbers: fixes with their own RNG are compared through their ``same_rng`` variant)."""
    with user_state_kept():
        call.reference = _seeded_call(call, 0)
        again = compare_outputs(call.reference, _seeded_call(call, 0))
        if not again.comparable:
            call.not_compared = f"the outputs cannot be compared: {again.problem}"
        elif again.problem is not None:
            call.not_compared = ("two calls of the original disagree (it updates state or is "
                                 f"nondeterministic): {again.problem}")
        else:
            call.draws_random = not compare_outputs(call.reference, _seeded_call(call, 1)).match
        args, kwargs = call.fresh()
        return measure_interleaved([bound(call.fn, args, kwargs)], call.device,
                                   samples=samples)[0]


def _seeded_call(call: Call, seed: int) -> Any:
    args, kwargs = call.fresh()
    seeded(seed)
    return call.fn(*args, **kwargs)


def try_fix(fix: Fix, call: Call, baseline: Timing, samples: int = DEFAULT_SAMPLES) -> Trial:
    """One fix on ``call`` (``measure_baseline`` must have run), timed in turn with the original
    (whose times in the result are from these interleaved samples). Never raises for the
    fix's own failures: those are the result."""
    result = FixResult(fix.name, fix.doc, applicable=True, status="raised",
                       baseline_us=baseline.median_us, baseline_spread_us=baseline.spread_us)
    with user_state_kept():
        try:
            applied, inputs, comparison, first_s = _first_call(fix, call)
            base_args, base_kwargs = call.fresh()
            args, kwargs = inputs
            same = applied.bind_same_inputs(args, kwargs)
            baseline, timing, harness, *same_timing = measure_interleaved(
                [bound(call.fn, base_args, base_kwargs), applied.bind(args, kwargs),
                 bound(_identity, args, kwargs), *([same] if same is not None else [])],
                call.device, samples=samples)
        except NotApplicable as exc:
            result.applicable, result.status, result.reason = False, "not applicable", str(exc)
            return Trial(result)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: a fix never ends the user's program
            result.error = first_line(exc)
            result.reason = f"the fix raised {result.error}"
            return Trial(result)
    not_compared = call.not_compared or (None if comparison.comparable else comparison.problem)
    if not_compared is not None:
        comparison = Comparison(True, None, None, None)
        result.mismatch = f"outputs not compared: {not_compared}"
    _fill(result, baseline, timing, comparison, max(0.0, first_s - timing.median_us * 1e-6))
    result.harness_us = harness.median_us
    if same_timing:
        fill_same_inputs(result, baseline, same_timing[0])
    if not_compared is not None:
        result.outputs_match = None
    return Trial(result, applied, inputs)


def _first_call(fix: Fix, call: Call) -> tuple[Applied, Args, Comparison, float]:
    """Check, apply, prepare the inputs, call once on the shared seed: the applied fix, its
    inputs, how its output compares, and the seconds all of that took (the setup)."""
    reason = fix.precondition(call)
    if reason is not None:
        raise NotApplicable(reason)
    started = time.perf_counter()
    applied = fix.apply(call)
    args, kwargs = applied.prepare(*call.fresh())
    seeded()
    out, _ = timed_call(applied.bind(args, kwargs), call.device)
    first_s = time.perf_counter() - started
    if call.draws_random and fix.same_rng is not None:
        out = _same_rng_output(fix, call, applied, out)
    return applied, (args, kwargs), compare_outputs(call.reference, out, fix.compute_dtype), \
        first_s


def _same_rng_output(fix: Fix, call: Call, applied: Applied, out: Any) -> Any:
    """The output of the fix's variant that draws random numbers as eager PyTorch does (the
    fix's own RNG would never match a sampling function); the fix's own output when that
    variant cannot be built or run (the comparison then says the outputs differ)."""
    assert fix.same_rng is not None
    try:
        same_args, same_kwargs = applied.prepare(*call.fresh())
        seeded()
        return fix.same_rng(call)(*same_args, **same_kwargs)
    except Exception:
        return out


def _fill(result: FixResult, baseline: Timing, timing: Timing, comparison: Any,
          setup_s: float) -> None:
    result.baseline_us, result.baseline_spread_us = baseline.median_us, baseline.spread_us
    result.fixed_us, result.fixed_spread_us = timing.median_us, timing.spread_us
    result.samples, result.calls_per_sample, result.clock = (
        len(timing.samples_us), timing.calls_per_sample, timing.clock)
    result.outputs_match = comparison.match
    result.max_abs_error, result.tolerance = comparison.max_abs_error, comparison.tolerance
    result.mismatch = comparison.problem or result.mismatch
    result.setup_s = setup_s
    ratio = baseline.median_us / timing.median_us if timing.median_us > 0 else None
    result.measured_speedup = ratio
    if not comparison.match:
        result.status = "outputs differ"
        result.reason = f"the fix changes the outputs: {comparison.problem}"
        return
    if ratio is None:
        result.status, result.reason = "cannot tell", "the fix's calls took no measurable time"
        return
    iv = paired_ratio(list(baseline.samples_us), list(timing.samples_us))
    low, high = _speedup_interval(iv, ratio)
    result.speedup, result.speedup_low, result.speedup_high = ratio, low, high
    result.status = classify(low, high)
    result.settle = settle_text(iv) if result.status == "cannot tell" else None
    result.break_even_calls = break_even(setup_s, baseline.median_us, timing.median_us)


def fill_same_inputs(result: FixResult, baseline: Timing, same: Timing) -> None:
    """The call on the same inputs (no copy): its time always; its speedup, paired interval
    and what that interval says when the fix has a speedup (its outputs did not differ), and
    the status of the two (``loop_status``), whose reason then names both numbers."""
    result.same_inputs_us, result.same_inputs_spread_us = same.median_us, same.spread_us
    if result.speedup is None or same.median_us <= 0:
        return
    result.same_inputs_speedup = ratio = baseline.median_us / same.median_us
    low, high = _speedup_interval(paired_ratio(list(baseline.samples_us),
                                               list(same.samples_us)), ratio)
    result.same_inputs_speedup_low, result.same_inputs_speedup_high = low, high
    result.same_inputs_status = classify(low, high)
    result.status = loop_status(result.status, result.same_inputs_status)
    if result.status == DEPENDS:
        result.reason = same_inputs_note(result.to_dict())


def _speedup_interval(iv: Interval, speedup: float) -> tuple[float, float]:
    """The speedup's 95% interval from fixed / baseline's over the interleaved pairs (a
    speedup is its inverse), stretched to hold ``speedup`` (the ratio of the medians, which
    on scattered samples can fall outside the paired pairs' interval: a number is never
    shown outside its own interval, and the status is read from the stretched one)."""
    low = 1 / iv.high if iv.high > 0 else 0.0
    high = 1 / iv.low if iv.low > 0 else math.inf
    return min(low, speedup), max(high, speedup)


def try_fixes(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    names: Sequence[str],
    samples: int = DEFAULT_SAMPLES,
    on_result: Callable[[FixResult], None] | None = None,
) -> tuple[Timing, list[Trial]]:
    """The baseline and one trial per named fix, in the order given; ``on_result`` hears of
    each result as soon as it is measured (a compile can take a while)."""
    unknown = [n for n in names if n not in FIXES]
    if unknown:
        raise ValueError(f"unknown fix(es) {unknown}; known: {list(FIXES)}")
    call = Call(fn, tuple(args), dict(kwargs))
    baseline = measure_baseline(call, samples)
    trials = []
    for name in names:
        trials.append(try_fix(FIXES[name], call, baseline, samples))
        if on_result is not None:
            on_result(trials[-1].result)
    return baseline, trials


def best(trials: Sequence[Trial]) -> Trial | None:
    """The fastest fix measured ``faster`` (its outputs matched, or the original's own could
    not be compared), or None."""
    good = [t for t in trials if t.result.status == "faster" and t.applied is not None]
    return max(good, key=lambda t: t.result.speedup or 0.0, default=None)
