"""The `threads` finding (CPU-only runs): the step waits for cores, not for its own work.

torch runs one intra-op thread per core by default; a parallel op (a matrix product, a
convolution) ends when its slowest thread does. When other processes hold the cores, or more
threads run than there are free cores, each parallel region waits for a time slice: the same
64x64 product took 6.6 ms a call with 2 threads on a loaded 2-core machine and 6 us with 1.
Two measures show it, either is enough:

- ``step_spread``: the slowest called step over the fastest, at least THREADS_SPREAD_RATIO,
  while every step issues the same ops (op count within SAME_WORK_TOLERANCE of the median)
  and the extra time is inside ops (the work did not change, its speed did);
- ``matrix_gflops``: the median rate of the leaf matrix products (FLOPs from their shapes),
  below SLOW_MATRIX_GFLOPS over at least MATRIX_MIN_CALLS calls: a core does 10-100 GFLOP/s,
  so a product a hundred times slower waited.

The manifest's ``intra_op_threads`` and ``cpus``, when the recorder wrote them, are named.

Where the step spread fired and the program runs more than one intra-op thread (or the
manifest does not say), the finding is also an opportunity (`threads_fix`): cause
`cpu_threads`, fix `set-num-threads`, `torch.set_num_threads(1)`. Its gain takes the fastest
called step as the step the program can attain once its threads stop waiting for one another:
the mean called step over the fastest (`predicted_spread`: each step over the fastest). Not
calibrated on a measured fix before the held-out programs (a T5 training step ran 6.3x faster
with 1 thread than 2 on a busy 2-core machine, not recorded): the interval is at least
PREDICTION_ERROR either way. With one thread already, the hint says so and no fix is offered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.called_steps import called_steps
from autoprof.analysis.diagnose.records import Diagnostic, rounded
from autoprof.analysis.kinds import CatalogueFixName
from autoprof.analysis.metrics.cpu_ops import matrix_calls, per_step_ops
from autoprof.analysis.metrics.stats import median
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

THREADS_SPREAD_RATIO = 3.0  # slowest / fastest called step
SAME_WORK_TOLERANCE = 0.1  # op count per step within 10% of the median: the same work
IN_OPS_SHARE = 0.5  # at least half the extra time of the slowest step is inside ops
SLOW_MATRIX_GFLOPS = 1.0  # median matrix-product rate below this: the products waited
MATRIX_MIN_CALLS = 3
PREDICTION_ERROR = 0.5  # uncalibrated (module doc): 2/3 to twice the estimate
FIX: CatalogueFixName = "set-num-threads"
ONE_THREAD_HINT = ("It already runs one intra-op thread: the waits are for other processes on "
                   "the machine. Time it where cores are free, or give it fewer competitors "
                   "(fewer concurrent jobs, taskset to dedicated cores).")


def threads_applies(ctx: Analysis) -> bool:
    return not ctx.has_gpu and not ctx.steps.empty


def _spread(ctx: Analysis, steps: pd.DataFrame) -> dict[str, Any]:
    """The step-spread measure and whether it fired."""
    span = steps["cpu_span_us"].to_numpy(float)
    if len(span) < 2 or not span.min() > 0:
        return {}
    table = per_step_ops(ctx.events, steps)
    keys = list(zip(steps["rank"].astype(int), steps["step"].astype(int), strict=True))
    by_step = table.groupby(["rank", "step"])[["calls", "self_us"]].sum()
    calls = np.array([by_step["calls"].get(k, 0) for k in keys], float)
    in_ops = np.array([by_step["self_us"].get(k, 0.0) for k in keys], float)
    slow, fast = int(np.argmax(span)), int(np.argmin(span))
    same = bool(np.all(np.abs(calls - median(calls)) <= SAME_WORK_TOLERANCE * median(calls)))
    extra_in_ops = (in_ops[slow] - in_ops[fast]) / (span[slow] - span[fast]) \
        if span[slow] > span[fast] else 0.0
    spread = float(span[slow] / span[fast])
    return {"step_ms": [round(float(v) / 1e3, 3) for v in span],
            "step_spread": round(spread, 2),
            "spread_threshold": THREADS_SPREAD_RATIO, "same_ops_per_step": same,
            "extra_time_in_ops_pct": round(100.0 * float(extra_in_ops), 1),
            "step_spread_fired": bool(spread >= THREADS_SPREAD_RATIO and same
                                      and extra_in_ops >= IN_OPS_SHARE)}


def _matrix(ctx: Analysis, steps: pd.DataFrame) -> dict[str, Any]:
    """The matrix-rate measure and whether it fired."""
    calls = matrix_calls(ctx.events, steps)
    if len(calls) < MATRIX_MIN_CALLS:
        return {}
    rate = median(calls["gflops"])
    top = str(calls["name"].value_counts().index[0])
    return {"matrix_gflops": rounded(rate, 3), "matrix_gflops_threshold": SLOW_MATRIX_GFLOPS,
            "matrix_calls": len(calls), "matrix_op": top,
            "matrix_call_us_median": rounded(median(calls["dur_us"]), 1),
            "matrix_call_mflops_median": rounded(median(calls["flops"]) / 1e6, 3),
            "matrix_gflops_fired": bool(rate < SLOW_MATRIX_GFLOPS)}


def _seen(ev: dict[str, Any]) -> str:
    parts = []
    if ev.get("step_spread_fired"):
        ms = ", ".join(fmt_us(v * 1e3) for v in ev["step_ms"])
        parts.append(f"steps vary {ev['step_spread']:.1f}x ({ms}) doing the same ops, the "
                     f"extra time inside them")
    if ev.get("matrix_gflops_fired"):
        parts.append(f"{ev['matrix_op']} runs at {ev['matrix_gflops']:g} GFLOP/s (median of "
                     f"{ev['matrix_calls']} calls of {ev['matrix_call_mflops_median']:g} "
                     f"MFLOP, {fmt_us(ev['matrix_call_us_median'])} each) where a core does "
                     "10-100")
    return "; ".join(parts)


def _counts(ctx: Analysis, ev: dict[str, Any]) -> str:
    record = ctx.record
    threads = record.intra_op_threads if record is not None else None
    cpus = record.cpus if record is not None else None
    if threads is not None and cpus is not None:
        ev.update(intra_op_threads=threads, cpus=cpus)
        return f" ({threads} intra-op threads on {cpus} CPUs here)"
    return ""


def threads(ctx: Analysis) -> Diagnostic | None:
    steps = called_steps(ctx)
    ev = {**_spread(ctx, steps), **_matrix(ctx, steps)}
    seen = _seen(ev)
    if not seen:
        return None
    message = (f"The step waits for cores, not for its work: {seen}. "
               f"On CPU that is intra-op threads competing for the cores{_counts(ctx, ev)}: "
               "torch starts one per core, and a parallel op ends when its last thread gets "
               "one, so other processes on the machine or more threads than free cores make "
               "each op wait.")
    hint = ("Set torch.set_num_threads(1) (or OMP_NUM_THREADS=1) and compare the step times, "
            "then raise it up to the cores that are free; on a shared machine keep it below "
            "them. Read per-step times only from a run whose steps agree.")
    if _one_thread(ctx):
        hint = ONE_THREAD_HINT
    return Diagnostic("threads", "warning", message, ev, hint)


def _one_thread(ctx: Analysis) -> bool:
    return ctx.record is not None and ctx.record.intra_op_threads == 1


def threads_fix(ctx: Analysis) -> dict[str, Any] | None:
    """The `cpu_threads` opportunity with its prediction (module doc), or None where the
    step spread did not fire, the run has GPU work or runs one intra-op thread already."""
    if not threads_applies(ctx) or _one_thread(ctx):
        return None
    steps = called_steps(ctx)
    ev = _spread(ctx, steps)
    if not ev.get("step_spread_fired"):
        return None
    span = steps["cpu_span_us"].to_numpy(float)
    fastest, mean = float(span.min()), float(span.mean())
    each = span / fastest
    ev.pop("step_ms", None)
    threads = ctx.record.intra_op_threads if ctx.record is not None else None
    now = f"{threads} intra-op threads" if threads else "torch's intra-op threads"
    hint = (f"the same step takes {ev['step_spread']:.1f}x longer at times, inside its ops: "
            f"{now} wait for cores that other threads or processes hold. Set "
            "torch.set_num_threads(1) (or OMP_NUM_THREADS=1) at the start of the program, "
            "then raise it while the step times agree and get faster")
    return {"cause": "cpu_threads", "us_per_step": mean - fastest,
            "pct_of_step": 100.0 * (mean - fastest) / mean,
            "max_speedup": mean / fastest,  # the bound: the extra time taken away
            "where": [{"name": "intra-op threads", "us_per_step": mean - fastest}],
            "hint": hint, "evidence": ev, "fix": FIX,
            "predicted_speedup": mean / fastest, "prediction_error": PREDICTION_ERROR,
            "predicted_spread": {"median": float(np.median(each)),
                                 "q1": float(np.quantile(each, 0.25)),
                                 "q3": float(np.quantile(each, 0.75)),
                                 "min": float(each.min()), "max": float(each.max())}}
