"""A watched function's window fitted to its budget from its own first recorded step.

``Watch.max_trace_mb`` and ``Watch.max_host_mb`` bound every window of a watched function,
the first one included. A triggered window is predicted before it starts from the healthy
window's trace (:mod:`autoprof.record.watch.budget`); the first window has nothing before it,
so it is measured as it records: the heap growth of its first recorded step (the profiler's
events of that step, held in memory; :mod:`.heap`), times ``TRACE_PER_HEAP``, predicts the
trace of each step. Where the schedule's recorded steps would not fit, the window ends after
the steps that do (at least the one measured): its schedule is cut there
(:meth:`.driver.Driver.cut`), the manifest's ``budget`` says so (``basis: first_step``) and a
note says it. Nothing here runs for a function that is not watched.
"""

from __future__ import annotations

from dataclasses import replace

from autoprof.record.options import Schedule
from autoprof.record.watch import budget
from autoprof.record.watch.config import Watch

_MB = 1024 * 1024
# trace bytes per byte of heap growth while the first step records (CPU events, torch 2.13,
# the 2-core development machine: 0.79, 0.67 and 0.66 at 200, 2,000 and 8,000 ops a step;
# benchmarks/watch_first_step.py): rounded up to 1, so a window is not under-predicted
TRACE_PER_HEAP = 1.0


def fit_first_step(schedule: Schedule, watch: Watch, heap_growth_bytes: int | None,
                   run_id: str) -> tuple[budget.Fit, int | None]:
    """The window's fit from its first recorded step's heap growth, and the recorded steps
    to keep (counting that one; None: keep the schedule)."""
    if heap_growth_bytes is None or heap_growth_bytes <= 0:
        unmeasured = budget.fit(schedule, watch.max_trace_mb, None, run_id, watch.max_host_mb)
        return replace(unmeasured, basis="first_step"), None
    per_step = heap_growth_bytes * TRACE_PER_HEAP
    fitted = budget.fit(schedule, watch.max_trace_mb, per_step, run_id, watch.max_host_mb)
    fitted = replace(fitted, basis="first_step",
                     first_step_host_mb=round(heap_growth_bytes / _MB, 6))
    keep = _keep(schedule, fitted)
    if keep is None:
        return fitted, None
    active, repeat = (keep, 1) if keep < schedule.active else (fitted.active, fitted.repeat)
    predicted = per_step * keep / _MB
    fits = (f"{keep} recorded step{'' if keep == 1 else 's'} of the {_asked(schedule)} fit"
            if fitted.active >= 1 else "not even one step fits; the window keeps the one "
            "it recorded")
    why = (f"{fitted.trace_mb_per_step:.3g} MB of trace a step (the first recorded step's "
           f"heap grew {heap_growth_bytes / _MB:.3g} MB): {fits} "
           f"Watch(max_trace_mb={watch.max_trace_mb:g}, max_host_mb={watch.max_host_mb:g})")
    return replace(fitted, active=active, repeat=repeat, predicted_trace_mb=round(predicted, 6),
                   predicted_host_mb=round(predicted * budget.HOST_PER_TRACE, 6),
                   why=why), keep


def _keep(schedule: Schedule, fitted: budget.Fit) -> int | None:
    """The recorded steps that fit (at least the one already recorded), or None when the
    schedule fits whole."""
    if fitted.active < schedule.active:
        return max(1, fitted.active)
    if schedule.repeat > 1 and fitted.repeat < schedule.repeat:
        return fitted.active * fitted.repeat
    return None


def _asked(schedule: Schedule) -> str:
    if schedule.repeat == 1:
        return f"{schedule.active} asked"
    cycles = "cycles until a flush" if schedule.repeat == 0 else f"{schedule.repeat} cycles"
    return f"{schedule.active} a cycle x {cycles} asked"
