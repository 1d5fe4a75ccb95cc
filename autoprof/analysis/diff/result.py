"""``autoprof.diff(a, b)``: faster, slower or the same, how sure, and why.

The result has the same fields as ``autoprof diff A B --json``. The exit status for CI
(:func:`exit_status`): 2 when the runs cannot be compared, 1 when B is significantly slower
than A by more than the gate (the lower end of the step time's confidence interval is above
``gate_pct``: a regression that is both real and larger than the gate), else 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from autoprof.analysis.diff.causes import Cause, bucket_causes, kernel_causes, op_causes
from autoprof.analysis.diff.comparability import Comparability, comparability
from autoprof.analysis.diff.facts import RunFacts, run_facts
from autoprof.analysis.diff.significance import Change, median_change
from autoprof.analysis.report.schema import DIFF_SCHEMA_VERSION
from autoprof.analysis.run import Run, load

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2


@dataclass(frozen=True)
class Metric:
    """A per-step number beside the step time (launches, memory peak, MFU)."""

    name: str
    a: float | None
    b: float | None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "a": self.a, "b": self.b}


@dataclass(frozen=True)
class RankChange:
    """One rank's step-time change, for runs that both have the same ranks."""

    rank: int
    step: Change

    def to_json(self) -> dict[str, object]:
        return {"rank": self.rank, "step_time": self.step.to_json()}


@dataclass(frozen=True)
class Diff:
    a: str
    b: str
    comparability: Comparability
    step: Change | None  # None when not comparable
    gpu: Change | None  # GPU work per step; None on CPU runs or when not comparable
    buckets: list[Cause] = field(default_factory=list)
    ops: list[Cause] = field(default_factory=list)
    kernels: list[Cause] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    ranks: list[RankChange] = field(default_factory=list)  # per rank; [] without ranks

    @property
    def verdict(self) -> str:
        return "not comparable" if self.step is None else self.step.verdict

    @property
    def why(self) -> list[Cause]:
        """The ops that explain the change, largest first, in the direction of the change."""
        if self.step is None or not self.step.change_pct:
            return []
        sign = 1.0 if self.step.change_pct > 0 else -1.0
        return [c for c in self.ops if c.delta_us * sign > 0][:5]

    def to_json(self) -> dict[str, object]:
        return {
            "schema_version": DIFF_SCHEMA_VERSION,
            "a": self.a,
            "b": self.b,
            "comparability": self.comparability.to_json(),
            "verdict": self.verdict,
            "step_time": None if self.step is None else self.step.to_json(),
            "gpu_time": None if self.gpu is None else self.gpu.to_json(),
            "why": [c.to_json() for c in self.why],
            "buckets": [c.to_json() for c in self.buckets],
            "ops": [c.to_json() for c in self.ops],
            "kernels": [c.to_json() for c in self.kernels],
            "metrics": [m.to_json() for m in self.metrics],
            "ranks": [r.to_json() for r in self.ranks],
            "method": METHOD,
        }


METHOD = ("per-step samples of both runs; the change of the median with a 95% percentile "
          "bootstrap interval (4000 resamples, fixed seed); faster or slower only when the "
          "interval excludes zero and the change is at least 2%")


def _metrics(a: RunFacts, b: RunFacts) -> list[Metric]:
    return [Metric("launches_per_step", a.launches_per_step, b.launches_per_step),
            Metric("memory_peak_bytes", a.memory_peak_bytes, b.memory_peak_bytes),
            Metric("mfu_pct", a.mfu_pct, b.mfu_pct)]


def rank_changes(a: RunFacts, b: RunFacts) -> list[RankChange]:
    """Each rank's step-time change, when A and B have the same ranks (the pooled verdict
    mixes them; a change on one rank, a straggler, shows here)."""
    if not a.step_us_by_rank or set(a.step_us_by_rank) != set(b.step_us_by_rank):
        return []
    return [RankChange(rank, median_change(a.step_us_by_rank[rank], b.step_us_by_rank[rank]))
            for rank in sorted(a.step_us_by_rank)]


def diff_facts(a: RunFacts, b: RunFacts) -> Diff:
    """The diff of two runs' facts (the pure part of :func:`diff`)."""
    comparable = comparability(a, b)
    if comparable.status == "not comparable":
        return Diff(a.label, b.label, comparable, None, None, metrics=_metrics(a, b))
    step = median_change(a.step_us, b.step_us)
    gpu = median_change(a.gpu_us, b.gpu_us) if a.is_cuda and b.is_cuda else None
    step_delta_us = (step.median_b - step.median_a
                     if step.median_a is not None and step.median_b is not None else 0.0)
    return Diff(a.label, b.label, comparable, step, gpu,
                buckets=bucket_causes(a, b, step_delta_us),
                ops=op_causes(a, b, step_delta_us),
                kernels=kernel_causes(a, b, step_delta_us),
                metrics=_metrics(a, b), ranks=rank_changes(a, b))


def _run(run: Run | str | os.PathLike[str]) -> Run:
    return run if isinstance(run, Run) else load(Path(run))


def diff(a: Run | str | os.PathLike[str], b: Run | str | os.PathLike[str]) -> Diff:
    """Compare run B against run A (the baseline); each a loaded :class:`Run` or a path that
    :func:`autoprof.load` takes (a run folder or a trace)."""
    return diff_facts(run_facts(_run(a)), run_facts(_run(b)))


def exit_status(result: Diff, gate_pct: float | None) -> int:
    """The CI exit status of a diff (see the module docstring)."""
    if result.step is None:
        return EXIT_NOT_COMPARABLE
    low = result.step.ci_low_pct
    if result.step.verdict == "slower" and low is not None and low > (gate_pct or 0.0):
        return EXIT_REGRESSION
    return EXIT_OK
