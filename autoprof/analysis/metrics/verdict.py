"""One word for a run: is the GPU waiting on the host, or the host on the GPU?

The rule (see docs/analysis.md for the evidence behind the thresholds):

| GPU work in the trace | gpu_busy_pct (Overhead) | verdict |
| --- | --- | --- |
| none | - | `cpu-only` |
| yes | below OVERHEAD_BELOW_PCT (15%) | `overhead-bound` |
| yes | OVERHEAD_BELOW_PCT to COMPUTE_FROM_PCT | `mixed` |
| yes | COMPUTE_FROM_PCT (60%) or more | `compute-bound` |

gpu_busy_pct is the share of the profiled window (first profiler step's start to the last
GPU work's end) in which any kernel, memcpy or memset runs. On the H200 fixtures it is about
2% at 64x64 and 79-84% at 4096x4096; on the size sweep it stays at 2-8% up to 1024, is 33% at
2048 (where, without the profiler, GPU time per call first exceeds the host's launch cost)
and 80-84% from 4096. The thresholds sit in the middle of those gaps. The profiler itself
adds host time to every op, so under the profiler a size looks somewhat more
overhead-bound than it is: the verdict describes the profiled run. NCCL kernels count as
busy (they hold the GPU); when they fill 5% of the window or more the reason says so, since a
rank that waits for a straggler shows a "busy" GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from autoprof.analysis.metrics.overhead import Overhead, overhead
from autoprof.analysis.metrics.stats import finite_or_none
from autoprof.units import fmt_us

VerdictKind = Literal["overhead-bound", "compute-bound", "mixed", "cpu-only"]

OVERHEAD_BELOW_PCT = 15.0
COMPUTE_FROM_PCT = 60.0
COMM_NOTE_PCT = 5.0  # the reason mentions communication kernels above this share


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


def verdict_from(ov: Overhead) -> Verdict:
    """The verdict for an already computed overhead picture."""
    kind = classify(ov.gpu_busy_pct if ov.has_gpu else None)
    evidence: dict[str, Any] = {
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


def verdict(events: pd.DataFrame, rank: int | None = None) -> Verdict:
    """overhead-bound / compute-bound / mixed / cpu-only, by the rule in this module's doc."""
    return verdict_from(overhead(events, rank))
