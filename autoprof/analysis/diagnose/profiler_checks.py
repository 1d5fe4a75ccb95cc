"""`profiler-slowdown`: the profiled steps run several times slower than the same calls untraced.

autoprof times the calls the profiler does not record (warm-up calls and the schedule's wait
steps); `Analysis.profiler_overhead` sets their median against the median profiled step. When
the profiler multiplies a step's time, the absolute times in the trace describe the profiler
as much as the program: shares and rankings still hold, durations do not.

The calls timed after the window (`after_window_call_ms`, timed as the warm-up calls are)
are the other witness: when they are as slow as the profiled steps (the profiled step under
PROFILER_SLOWDOWN_RATIO times their median), the program ran that slowly without the
profiler too (other work on the machine, intra-op threads waiting for cores), so the
profiler is not what made the steps slow and the finding stays silent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.metrics.stats import median
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

PROFILER_SLOWDOWN_RATIO = 3.0  # profiled step / untraced call at and above which to say so


def profiler_slowdown(ctx: Analysis) -> Diagnostic | None:
    po = ctx.profiler_overhead
    if not po.get("available"):
        return None
    profiled, untraced = float(po["profiled_step_us"]), float(po["untraced_call_us"])
    if untraced <= 0 or profiled < PROFILER_SLOWDOWN_RATIO * untraced:
        return None
    after = _after_window_us(ctx)
    if after is not None and profiled < PROFILER_SLOWDOWN_RATIO * after:
        return None  # as slow without the profiler, after the window: not the profiler's
    ratio = profiled / untraced
    evidence = {
        "profiled_step_us": round(profiled, 2),
        "untraced_call_us": round(untraced, 2),
        "untraced_calls": int(po["untraced_calls"]),
        "slowdown": round(ratio, 2),
        "ratio_threshold": PROFILER_SLOWDOWN_RATIO,
        "after_window_call_us": round(after, 2) if after is not None else None,
    }
    message = (f"A profiled step takes {fmt_us(profiled)}, {ratio:.1f}x the "
               f"{fmt_us(untraced)} the same call takes untraced (median of "
               f"{evidence['untraced_calls']} untraced calls): most of a step's time in this "
               "trace is the profiler's own.")
    hint = ("Read the trace for shares and rankings, not durations. To shrink the profiler's "
            "cost, record less (record_shapes=False; with_stack, profile_memory and "
            "with_modules left off) or profile a larger "
            "problem size, where each op's fixed cost matters less.")
    return Diagnostic("profiler-slowdown", "warning", message, evidence, hint)


def _after_window_us(ctx: Analysis) -> float | None:
    """The median call after the window (us), timed without the profiler; None without."""
    record = ctx.record
    calls = [1000.0 * float(v) for v in (record.after_window_call_ms if record else ())
             if v > 0]
    return median(calls) if calls else None
