"""One word for a run: which side holds most of its steps?

The rule follows the breakdown (metrics/breakdown.py): the step's time in three sides,

| side | buckets | verdict when it holds at least DOMINANT_PCT (two thirds) of the step |
| --- | --- | --- |
| host | host_launch + host_sync + host_cpu_work + host_untraced | `overhead-bound` |
| GPU | gpu_compute + gpu_memory | `compute-bound` |
| communication | gpu_communication + host_communication (exposed only) | `communication-bound` |

No side at DOMINANT_PCT or more: `mixed`. No GPU work in the trace: `cpu-only`. Two thirds, not
a bare half: at 2048x2048 the profiled host holds 65% of the step while, untraced, a call costs
twice its launch (the GPU sets the pace): neither side clearly dominates. On the H200
fixtures the host holds 95% of a 64x64 step and the GPU 83% of a 4096x4096 step; eager
replay of 100 small ops is 90% host, its CUDA-graph replay 89% GPU; the fast rank of the
two-rank DDP run spends 92% of its step in exposed NCCL time (waiting for the slow rank).

Which step: from TYPICAL_FROM_STEPS (3) recorded steps, the median step by time (the typical
step), not the mean. A step slowed once (the first profiled step's one-time costs, a page
fault, a neighbour on the machine) moves the mean, and with the default 3 active steps one
such step flipped the seed's 4096x4096 verdict from compute-bound to `mixed` in 4 of 10 fresh
processes on an H100; when the steps alone would give different verdicts the reason says so.

Before the sides: `input-bound` when the median step spends INPUT_BOUND_PCT (half) or more of
its time between two calls with no GPU work running (the breakdown's `between_calls_us`: the
caller's loop, `for batch in loader: step(batch)`), and that time is at least
INPUT_BOUND_MIN_US a step. The reason names the largest part of it (`DataLoader.__next__`, or
untraced code of the caller's loop) and says when steps fall on both sides of the threshold.
On the H200 truth recordings a DataLoader with num_workers=0 in the caller's loop spends
78-83% of each iteration there (a profiler-free measurement: 86%), with pin_memory on a CNN
66-69% (75%); workers that keep up, a loader inside the function, the seeds and the syncs
1-33%. The floor of 100 us keeps out autoprof's own return from one call and entry into the
next, untraced and between calls: 14-25 us a step on a bare CPU loop.

Without a breakdown (no steps, or a caller that has none), the GPU busy share of the
profiled window stands in for the GPU side (`classify`): below OVERHEAD_BELOW_PCT (15%)
`overhead-bound`, from COMPUTE_FROM_PCT (60%) `compute-bound`, `mixed` between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autoprof.analysis.kinds import (
    COMMUNICATION_BUCKETS,
    GPU_BUCKETS,
    HOST_BUCKETS,
    VerdictKind,
)
from autoprof.analysis.metrics.overhead import Overhead
from autoprof.analysis.metrics.replay.loop import (
    INPUT_BOUND_PCT,
    input_bound_reason,
    where_text,
)
from autoprof.analysis.metrics.replay.replay import Spread
from autoprof.analysis.metrics.stats import finite_or_none
from autoprof.units import fmt_us

INPUT_BOUND_MIN_US = 100.0

OVERHEAD_BELOW_PCT = 15.0
COMPUTE_FROM_PCT = 60.0
COMM_NOTE_PCT = 5.0  # the reason mentions communication kernels above this share
DOMINANT_PCT = 200.0 / 3  # a side clearly dominates: two thirds of the step
TYPICAL_FROM_STEPS = 3  # from this many steps the verdict reads the median step, not the mean
HOST_SIDE = tuple(b for b in HOST_BUCKETS if b not in COMMUNICATION_BUCKETS)
GPU_SIDE = tuple(b for b in GPU_BUCKETS if b not in COMMUNICATION_BUCKETS)
COMMUNICATION_SIDE = COMMUNICATION_BUCKETS


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "evidence": dict(self.evidence)}


def classify(busy_pct: float | None) -> VerdictKind:
    """The verdict for a GPU busy percentage (None: no GPU work)."""
    if busy_pct is None:
        return "cpu-only"
    if busy_pct < OVERHEAD_BELOW_PCT:
        return "overhead-bound"
    if busy_pct < COMPUTE_FROM_PCT:
        return "mixed"
    return "compute-bound"


def sides(buckets_pct: dict[str, float]) -> dict[str, float]:
    """The host / GPU / communication shares of a step (percent) from its bucket shares."""
    return {"host": sum(buckets_pct.get(b, 0.0) for b in HOST_SIDE),
            "gpu": sum(buckets_pct.get(b, 0.0) for b in GPU_SIDE),
            "communication": sum(buckets_pct.get(b, 0.0) for b in COMMUNICATION_SIDE)}


def classify_sides(buckets_pct: dict[str, float] | None, has_gpu: bool) -> VerdictKind:
    """The verdict for a breakdown's bucket shares (see the module doc)."""
    if not has_gpu:
        return "cpu-only"
    if not buckets_pct:
        return "mixed"
    share = sides(buckets_pct)
    side, pct = max(share.items(), key=lambda kv: kv[1])
    if pct < DOMINANT_PCT:
        return "mixed"
    return {"host": "overhead-bound", "gpu": "compute-bound",
            "communication": "communication-bound"}[side]  # type: ignore[return-value]


def between_share(breakdown: dict[str, Any] | None) -> Spread | None:
    """The share of each step (percent) that passes between calls with the GPU idle, over
    the steps with a call; None without one."""
    shares = [100.0 * float(st["between_calls_us"]) / float(st["step_us"])
              for st in (breakdown or {}).get("per_step") or []
              if st.get("between_calls_us") is not None and float(st["step_us"] or 0) > 0]
    return Spread.of(shares) if shares else None


def is_input_bound(breakdown: dict[str, Any] | None) -> bool:
    """Does the median step spend INPUT_BOUND_PCT or more between calls (module doc)?"""
    share = between_share(breakdown)
    per_step = [float(st["between_calls_us"]) for st in (breakdown or {}).get("per_step") or []
                if st.get("between_calls_us") is not None]
    return share is not None and share.median >= INPUT_BOUND_PCT and \
        float(np.median(per_step)) >= INPUT_BOUND_MIN_US


def typical_step(breakdown: dict[str, Any] | None) -> tuple[float, dict[str, float]] | None:
    """The median step (by step time; the faster of the two middle ones for an even count)
    of a mean breakdown's `per_step`, as (step_us, bucket shares in percent), from
    TYPICAL_FROM_STEPS steps on; None with fewer."""
    steps = sorted((st for st in (breakdown or {}).get("per_step") or []
                    if float(st.get("step_us") or 0.0) > 0),
                   key=lambda st: float(st["step_us"]))
    if len(steps) < TYPICAL_FROM_STEPS:
        return None
    middle = steps[(len(steps) - 1) // 2]
    step_us = float(middle["step_us"])
    return step_us, {b: 100.0 * float(v) / step_us for b, v in middle["buckets_us"].items()}


def verdict_shares(breakdown: dict[str, Any] | None) -> tuple[float, dict[str, float]] | None:
    """What the verdict is read from: the typical step (`typical_step`) where there is one,
    else the mean step; None without a breakdown's steps."""
    if not breakdown or not breakdown.get("steps"):
        return None
    typical = typical_step(breakdown)
    if typical is not None:
        return typical
    pct = breakdown.get("buckets_pct")
    return (float(breakdown.get("step_us") or 0.0), dict(pct)) if pct else None


def classify_breakdown(breakdown: dict[str, Any] | None, has_gpu: bool) -> VerdictKind:
    """The verdict of a mean breakdown (`Breakdown.mean()`): `input-bound` first, else by
    the sides of its typical step (`verdict_shares`, `classify_sides`)."""
    if is_input_bound(breakdown):
        return "input-bound"
    shares = verdict_shares(breakdown)
    return classify_sides(None if shares is None else shares[1], has_gpu)


def _input_bound(ov: Overhead, bd: dict[str, Any]) -> Verdict:
    share = between_share(bd) or Spread.of([])  # is_input_bound held: never empty
    names = bd.get("between_calls_where") or []
    where = where_text(str(names[0]["name"])) if names else where_text("untraced")
    evidence = {**_evidence(ov), "between_calls_pct": {"median": share.median,
                                                       "min": share.low, "max": share.high},
                "between_calls_us": bd.get("between_calls_us"), "step_us": bd.get("step_us"),
                "input_bound_pct": INPUT_BOUND_PCT, "between_calls_where": names}
    return Verdict("input-bound", input_bound_reason(share, where, ov.has_gpu), evidence)


def _evidence(ov: Overhead) -> dict[str, Any]:
    return {
        "gpu_busy_pct": finite_or_none(ov.gpu_busy_pct),
        "gpu_comm_pct": finite_or_none(ov.gpu_comm_pct),
        "self_cpu_us": ov.self_cpu_us,
        "self_gpu_us": ov.self_gpu_us,
        "cpu_gpu_ratio": finite_or_none(ov.cpu_gpu_ratio),
        "window_us": ov.window_us,
        "kernels": ov.kernels,
        "steps": ov.steps,
        "step_cpu_span_us_median": ov.step_cpu_span_us_median,
        "step_gpu_work_us_median": ov.step_gpu_work_us_median,
        "overhead_below_pct": OVERHEAD_BELOW_PCT,
        "compute_from_pct": COMPUTE_FROM_PCT,
    }


def verdict_from(ov: Overhead, breakdown: dict[str, Any] | None = None,
                 note: str | None = None) -> Verdict:
    """The verdict for an overhead picture and, when given, the run's mean breakdown
    (`Breakdown.mean()`); `note` is appended to the reason (the profiler-overhead caveat)."""
    shares = verdict_shares(breakdown)
    if breakdown is not None and is_input_bound(breakdown):
        found = _input_bound(ov, breakdown)
    elif shares is None or not ov.has_gpu:
        found = _from_busy(ov)
    else:
        found = _from_breakdown(ov, breakdown or {}, *shares)
    if note:
        return Verdict(found.kind, f"{found.reason}; {note}", found.evidence)
    return found


def _from_breakdown(ov: Overhead, bd: dict[str, Any], step_us: float,
                    pct: dict[str, float]) -> Verdict:
    kind = classify_sides(pct, ov.has_gpu)
    share = sides(pct)
    evidence = {**_evidence(ov), "sides_pct": share, "dominant_pct": DOMINANT_PCT,
                "step_us": bd.get("step_us"), "verdict_step_us": step_us}
    top = max((b for b in pct), key=lambda b: pct[b])
    which = (f"a {fmt_us(step_us)} step" if typical_step(bd) is None else
             f"the median step ({fmt_us(step_us)}; mean {fmt_us(bd.get('step_us'))})")
    split = (f"of {which} the host side holds {share['host']:.0f}%, "
             f"GPU work {share['gpu']:.0f}%, exposed communication "
             f"{share['communication']:.0f}% (largest bucket: {top}, {pct[top]:.0f}%)")
    if kind == "overhead-bound":
        reason = f"{split}: the GPU waits for the host"
    elif kind == "compute-bound":
        reason = f"{split}: the host keeps the GPU fed and GPU time decides speed"
    elif kind == "communication-bound":
        reason = (f"{split}: the GPU mostly runs NCCL communication kernels with nothing "
                  "beside them, often only waiting for another rank (see the rank table)")
    else:
        reason = f"{split}: no side holds {DOMINANT_PCT:.0f}% of the step"
    over_steps = sides_over_steps(bd, ov.has_gpu)
    if over_steps is not None:
        evidence["sides_pct_over_steps"] = over_steps[0]
        reason += over_steps[1]
    return Verdict(kind, reason, evidence)


_SIDE_WORDS = {"host": "the host side", "gpu": "GPU work", "communication": "exposed communication"}


def sides_over_steps(bd: dict[str, Any], has_gpu: bool
                     ) -> tuple[dict[str, dict[str, float]], str] | None:
    """Each side's share over the steps (min, median, max) and, when the steps alone would
    not all give one verdict, the note that says so (a rerun could give another verdict)."""
    steps = [st for st in bd.get("per_step") or [] if st.get("step_us")]
    if not steps:
        return None
    shares = [sides({b: 100.0 * v / st["step_us"] for b, v in st["buckets_us"].items()})
              for st in steps]
    spread = {side: {"min": min(sh[side] for sh in shares),
                     "median": float(np.median([sh[side] for sh in shares])),
                     "max": max(sh[side] for sh in shares)} for side in shares[0]}
    kinds = {classify_sides({b: 100.0 * v / st["step_us"] for b, v in st["buckets_us"].items()},
                            has_gpu) for st in steps}
    if len(kinds) < 2:
        return spread, ""
    side = max(spread, key=lambda k: spread[k]["median"])
    return spread, (f" (steps disagree: {_SIDE_WORDS[side]} {spread[side]['min']:.0f}-"
                    f"{spread[side]['max']:.0f}% of the step across steps; a rerun could give "
                    "another verdict)")


def _from_busy(ov: Overhead) -> Verdict:
    """The verdict for an already computed overhead picture."""
    kind = classify(ov.gpu_busy_pct if ov.has_gpu else None)
    evidence = _evidence(ov)
    if kind == "cpu-only":
        reason = (f"no GPU work in the trace: {fmt_us(ov.self_cpu_us)} of self CPU time, "
                  "all on the host")
        return Verdict(kind, reason, evidence)
    busy = f"the GPU is busy {ov.gpu_busy_pct:.1f}% of the profiled window"
    per_step = (f"a step takes {fmt_us(ov.step_cpu_span_us_median)} on the CPU and gives the "
                f"GPU {fmt_us(ov.step_gpu_work_us_median)} of work"
                if ov.steps else
                f"self CPU {fmt_us(ov.self_cpu_us)} vs self GPU {fmt_us(ov.self_gpu_us)}")
    if kind == "overhead-bound":
        reason = (f"{busy} (below {OVERHEAD_BELOW_PCT:.0f}%): it waits for the host to "
                  f"launch work; {per_step}")
    elif kind == "compute-bound":
        reason = (f"{busy} (at least {COMPUTE_FROM_PCT:.0f}%): the host keeps it fed and "
                  f"GPU time decides speed; {per_step}")
    else:
        reason = (f"{busy} (between {OVERHEAD_BELOW_PCT:.0f}% and {COMPUTE_FROM_PCT:.0f}%): "
                  f"host overhead and GPU work both matter; {per_step}")
    if ov.gpu_comm_pct is not None and ov.gpu_comm_pct >= COMM_NOTE_PCT:
        reason += (f"; {ov.gpu_comm_pct:.1f}% of the window is NCCL communication kernels, "
                   "which may only be waiting for other ranks (see the rank table)")
    return Verdict(kind, reason, evidence)
