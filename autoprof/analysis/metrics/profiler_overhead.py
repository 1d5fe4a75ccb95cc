"""How much the profiler itself slows a step, from the untraced calls of the same run.

autoprof times calls the profiler does not record (the manifest's `warmup_call_ms` and
`wait_call_ms`, each ended by a device sync). Their median, `untraced_call_us` (a typical
untraced call; the replay's reference is the fastest, `steady_call_us`), against the median
profiled step (`breakdown` step_us: the call region, autoprof's own time removed):

    overhead_us  = profiled_step_us - untraced_call_us
    overhead_pct = 100 * overhead_us / profiled_step_us   (the profiler's share of a step)

The profiler adds host time to every op and leaves GPU work as it is, so the run without it
is estimated by taking the overhead off the host side: GPU and communication time unchanged,
host time = untraced call - GPU - communication (at least 0, at most the profiled host time:
removing the profiler never adds host work). When that estimate gets another
verdict than the profiled run, `verdict_without_profiler` names it. An untraced call includes
the device sync that ends it (10-30 us on an H200), so on GPU-bound steps the difference is
within that and can be negative: `overhead_us` keeps the sign, `overhead_pct` is then 0. On
the H200 size sweep the profiler takes 35-48% of a step up to 2048x2048 (host-bound sizes),
nothing measurable from 4096. The first warm-up call is
left out when there are others (it carries one-time start-up costs). In a multi-rank run the
calls are those of the manifest's rank, compared with that rank's steps. Untraced calls over
NOT_COMPARABLE (2x) a profiled step did other work than the steps: no overhead is reported.

The share is stated only when the noise supports it (`share_interval`): profiled / untraced
gets a 95% interval from the log times (Welch's t; one profiled step is taken as exact, fewer
than 2 untraced calls give no interval). `overhead_told` is True only when the interval lies
above 1; otherwise `overhead_note` says the share cannot be told and what would settle it, the
report says that instead of a percentage, and the verdict note is not given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from autoprof.analysis.metrics.breakdown import Breakdown
from autoprof.analysis.metrics.replay.baseline import Reference
from autoprof.analysis.metrics.verdict import GPU_SIDE, HOST_SIDE, classify_sides
from autoprof.student_t import t975
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.runfolder import Manifest

# an untraced call this many times slower than a profiled step did other work (a first
# call's setup, a different input): no overhead can be read from it
NOT_COMPARABLE = 2.0
def share_interval(steps_us: list[float], calls_us: list[float]) -> tuple[float, float] | None:
    """95% interval of profiled / untraced (Welch's t on log times; a single profiled step
    is taken as exact, so the untraced calls' spread alone sets the width); None with fewer
    than 2 untraced calls, no step or a non-positive time."""
    a = np.log([v for v in steps_us if v > 0])
    b = np.log([v for v in calls_us if v > 0])
    if len(a) < 1 or len(b) < 2:
        return None
    va = float(np.var(a, ddof=1)) / len(a) if len(a) > 1 else 0.0
    vb = float(np.var(b, ddof=1)) / len(b)
    d = float(a.mean() - b.mean())
    if va + vb == 0:
        return float(np.exp(d)), float(np.exp(d))
    parts = [vb ** 2 / (len(b) - 1)] + ([va ** 2 / (len(a) - 1)] if len(a) > 1 else [])
    half = t975(max(1.0, (va + vb) ** 2 / sum(parts))) * float(np.sqrt(va + vb))
    return float(np.exp(d - half)), float(np.exp(d + half))


def share_told(steps_us: list[float], calls_us: list[float]) -> dict[str, Any]:
    """`overhead_told`, the share's interval in percent and, when not told, `overhead_note`."""
    iv = share_interval(steps_us, calls_us)
    if iv is None:
        return {"overhead_told": False, "overhead_note": (
            f"cannot tell the profiler's share from {len(calls_us)} untraced call(s) and "
            f"{len(steps_us)} profiled step(s): at least 2 untraced calls are needed")}
    low, high = iv
    out: dict[str, Any] = {"overhead_pct_low": max(0.0, 100 * (1 - 1 / low)),
                           "overhead_pct_high": max(0.0, 100 * (1 - 1 / high)),
                           "overhead_told": low > 1.0}
    if low <= 1.0:
        out["overhead_note"] = (
            f"cannot tell the profiler's share: profiled / untraced is {_ratio(low)} to "
            f"{_ratio(high)} "
            f"(95%) from {len(calls_us)} untraced calls, which holds 1x; more untraced calls "
            "(a longer warm-up or wait) or a quieter machine would settle it")
    return out


def _ratio(value: float) -> str:
    """A ratio bound as text; beyond 100x either way (two untraced calls give bounds of
    1e-6x and 1e6x) only the side it lies on."""
    if value < 0.01:
        return "<0.01x"
    return ">100x" if value > 100 else f"{value:.2f}x"


def untraced_calls_us(record: Manifest | None) -> list[float]:
    """The untraced call times of a run, in microseconds (the first warm-up call dropped when
    others exist); none without a record."""
    if record is None:
        return []
    warm = [float(v) * 1000.0 for v in record.warmup_call_ms]
    wait = [float(v) * 1000.0 for v in record.wait_call_ms]
    if len(warm) > 1:
        warm = warm[1:]
    return [v for v in warm + wait if v > 0]


def steady_call_us(record: Manifest | None) -> float | None:
    """The steady untraced call: the fastest of `untraced_calls_us` (None without any).
    Each is the same call synchronised at both ends; what makes one slower than another is
    the process still warming up (the allocator's first blocks, autotuning, cold caches) or
    other work on the machine, never the call itself, so the fastest is the call's own cost
    (timeit's rule). The replay's reference (diagnose/predictions.py); the findings that
    judge the profiler's share keep the median, which a rerun moves less."""
    calls = untraced_calls_us(record)
    return min(calls) if calls else None


def reference(record: Manifest | None) -> Reference:
    """The untraced times the replay is paced to (metrics/replay/baseline.py): the steady
    call, the least time between two warm-up calls (the caller's loop), the least cost of
    the closing sync with nothing to wait for, and the untraced iteration the recorder timed
    after the window (a block of calls back to back); each None where the manifest has
    none."""
    if record is None:
        return Reference()
    between = [float(v) * 1000.0 for v in record.warmup_between_ms if v > 0]
    sync = [float(v) * 1000.0 for v in record.idle_sync_ms if v >= 0]
    iteration = record.after_window_iter_ms
    return Reference(call_us=steady_call_us(record), between_us=min(between, default=None),
                     sync_us=min(sync, default=None),
                     after_window_us=1000.0 * iteration if iteration is not None else None)


def profiler_overhead(bd: Breakdown, record: Manifest | None, has_gpu: bool
                      ) -> dict[str, Any]:
    """The summary's `profiler_overhead` (see the module doc); `available` False, with
    `reason`, when the run has no untraced calls or no profiled steps."""
    calls = untraced_calls_us(record)
    if len(bd.steps) and bd.steps["rank"].nunique() > 1:  # the manifest's calls are its rank's
        rank = record.rank if record is not None else None
        bd = bd.for_rank(rank if rank is not None else int(bd.steps["rank"].min()))
    steps = bd.steps[bd.steps["step"] >= 0] if len(bd.steps) else bd.steps
    if not calls or not len(steps):
        why = "no untraced calls in the manifest" if not calls else "no profiled steps"
        return {"available": False, "reason": why}
    profiled = float(np.median(steps["step_us"]))
    untraced = float(np.median(calls))
    if untraced > NOT_COMPARABLE * profiled:
        return {"available": False, "untraced_call_us": untraced, "profiled_step_us": profiled,
                "reason": f"untraced calls ({fmt_us(untraced)}) take over {NOT_COMPARABLE:g}x "
                          f"a profiled step ({fmt_us(profiled)}): not the same work"}
    overhead = profiled - untraced
    mean = bd.mean()
    buckets: dict[str, float] = mean["buckets_us"]  # type: ignore[assignment]
    step_us = float(mean["step_us"])  # type: ignore[arg-type]
    scale = profiled / step_us if step_us > 0 else 1.0  # mean buckets, at the median step
    gpu = scale * sum(buckets[b] for b in GPU_SIDE)
    comm = scale * buckets["gpu_communication"]
    host = scale * sum(buckets[b] for b in HOST_SIDE)
    # the profiler only adds host time: an untraced call slower than a profiled step (a warm-up
    # call still paying for allocations, a sync's wait) never makes the host side larger
    est_host = min(max(untraced - gpu - comm, 0.0), host)
    est_step = est_host + gpu + comm
    est_pct = ({"host_untraced": 100 * est_host / est_step, "gpu_compute": 100 * gpu / est_step,
                "gpu_communication": 100 * comm / est_step} if est_step > 0 else {})
    profiled_pct = ({"host_untraced": 100 * host / profiled, "gpu_compute": 100 * gpu / profiled,
                     "gpu_communication": 100 * comm / profiled} if profiled > 0 else {})
    without = classify_sides(est_pct, has_gpu)
    with_profiler = classify_sides(profiled_pct, has_gpu)
    return {
        "available": True,
        "profiled_step_us": profiled,
        "untraced_call_us": untraced,
        "untraced_calls": len(calls),
        # the loop's iteration without the profiler, timed after the window (CUDA only)
        "untraced_iteration_us": reference(record).after_window_us,
        "overhead_us": overhead,
        "overhead_pct": max(100.0 * overhead / profiled, 0.0) if profiled > 0 else None,
        "estimated_host_us": est_host,
        "gpu_us": gpu,
        **share_told([float(v) for v in steps["step_us"]], calls),
        "verdict_with_profiler": with_profiler,
        "verdict_without_profiler": without,
        "changes_verdict": without != with_profiler,
    }


def verdict_note(po: dict[str, Any]) -> str | None:
    """A sentence for the verdict's reason when the unprofiled run would get another verdict."""
    if not po.get("available") or not po.get("changes_verdict") \
            or po.get("overhead_told") is False:
        return None
    return (f"without the profiler a call takes {fmt_us(po['untraced_call_us'])} instead of "
            f"{fmt_us(po['profiled_step_us'])} (the profiler's share: "
            f"{po['overhead_pct']:.0f}%), and the call alone would be "
            f"{po['verdict_without_profiler']}")
