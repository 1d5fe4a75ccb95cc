"""``autoprof.diff(a, b)``: faster, slower or the same, how sure, and why.

The result has the same fields as ``autoprof diff A B --json``. Each side is one run, or
several recordings of one program (repeats: a folder of run folders), whose spread between
runs the interval then measures (significance.py). The exit status for CI
(:func:`exit_status`): 2 when the runs cannot be compared (or either side's step times
cannot be read: too few steps); with a gate, the gate's answer (gate.py: 1 fail, 0 pass, 3
cannot tell); without one, 1 when B is significantly slower than A, else 0.

The verdict is on the step time. Where the step time's change is within its noise but the
GPU's work per step changed beyond its own, much narrower noise, and that work is at least
GPU_BOUND_SHARE of the step (the GPU bounds it, so its change is the step's, seen with less
noise), the verdict is on the GPU time per step (``judged_on``: ``gpu_time``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from autoprof.analysis.diff.causes import (
    Cause,
    bucket_causes,
    kernel_causes,
    op_causes,
    self_op_causes,
)
from autoprof.analysis.diff.comparability import Comparability, comparability
from autoprof.analysis.diff.facts import RunFacts, run_facts
from autoprof.analysis.diff.gate import GateAnswer, answer
from autoprof.analysis.diff.readable import damaged_sides, unreadable_change
from autoprof.analysis.diff.significance import (
    CPU_NOISE_FLOOR_PCT,
    CUDA_GPU_NOISE_FLOOR_PCT,
    CUDA_NOISE_FLOOR_PCT,
    NOISE_FLOOR_PCT,
    Change,
    median_change,
    repeated_change,
)
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.report.schema import DIFF_SCHEMA_VERSION
from autoprof.analysis.run import Run, find_runs, load

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2
GPU_BOUND_SHARE = 0.5  # the GPU's work per step over the step in A: the GPU bounds the step


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
    ops: list[Cause] = field(default_factory=list)  # outermost ops, children rolled up
    kernels: list[Cause] = field(default_factory=list)
    self_ops: list[Cause] = field(default_factory=list)  # ops by their own (self) time
    metrics: list[Metric] = field(default_factory=list)
    ranks: list[RankChange] = field(default_factory=list)  # per rank; [] without ranks
    # "A", "B": the sides with recorded steps whose times cannot be read (readable.py)
    unreadable_sides: tuple[str, ...] = ()

    @property
    def judged_on(self) -> str | None:
        """The measure the verdict is on: ``step_time``, or ``gpu_time`` where only the GPU's
        work per step changed beyond its noise and the GPU bounds the step (the module doc);
        None when not comparable."""
        if self.step is None:
            return None
        gpu, step = self.gpu, self.step
        if (step.verdict == "no significant change" and gpu is not None
                and gpu.verdict in ("slower", "faster") and gpu.median_a and step.median_a
                and gpu.median_a >= GPU_BOUND_SHARE * step.median_a):
            return "gpu_time"
        return "step_time"

    @property
    def judged(self) -> Change | None:
        """The change the verdict is on (``judged_on``)."""
        return self.gpu if self.judged_on == "gpu_time" else self.step

    @property
    def verdict(self) -> str:
        judged = self.judged
        return "not comparable" if judged is None else judged.verdict

    @property
    def why(self) -> list[Cause]:
        """The ops that explain the change, largest first, in the direction of the change."""
        judged = self.judged
        if judged is None or not judged.change_pct:
            return []
        sign = 1.0 if judged.change_pct > 0 else -1.0
        return [c for c in self.ops if c.ranked_us * sign > 0][:5]

    def to_json(self) -> dict[str, object]:
        return {
            "schema_version": DIFF_SCHEMA_VERSION,
            "a": self.a,
            "b": self.b,
            "comparability": self.comparability.to_json(),
            "verdict": self.verdict,
            "judged_on": self.judged_on,
            "step_time": None if self.step is None else self.step.to_json(),
            "gpu_time": None if self.gpu is None else self.gpu.to_json(),
            "why": [c.to_json() for c in self.why],
            "buckets": [c.to_json() for c in self.buckets],
            "ops": [c.to_json() for c in self.ops],
            "kernels": [c.to_json() for c in self.kernels],
            "self_ops": [c.to_json() for c in self.self_ops],
            "metrics": [m.to_json() for m in self.metrics],
            "ranks": [r.to_json() for r in self.ranks],
            "method": METHOD,
        }


METHOD = ("per-step samples of each run; the change of the median step with a 95% interval "
          "from a bootstrap of each run's steps (4000 resamples, fixed seed) plus the spread "
          "between runs (measured from repeats; with one run a side the spread of each run's "
          f"thirds, never under a floor of {CPU_NOISE_FLOOR_PCT:g}% on CPU, "
          f"{CUDA_NOISE_FLOOR_PCT:g}% on CUDA, {CUDA_GPU_NOISE_FLOOR_PCT:g}% for the GPU's "
          "work per step); faster or slower only when the interval excludes zero, judged on "
          "the GPU time per step where only it changed and the GPU's work is at least "
          f"{GPU_BOUND_SHARE:.0%} of the step; min_detectable_pct is the smallest change these "
          "runs can tell from noise")


def _metrics(a: RunFacts, b: RunFacts) -> list[Metric]:
    return [Metric("launches_per_step", a.launches_per_step, b.launches_per_step),
            Metric("memory_peak_bytes", a.memory_peak_bytes, b.memory_peak_bytes),
            Metric("mfu_pct", a.mfu_pct, b.mfu_pct)]


def rank_changes(a: RunFacts, b: RunFacts,
                 noise_floor_pct: float = NOISE_FLOOR_PCT) -> list[RankChange]:
    """Each rank's step-time change, when A and B have the same ranks (the pooled verdict
    mixes them; a change on one rank, a straggler, shows here)."""
    if not a.step_us_by_rank or set(a.step_us_by_rank) != set(b.step_us_by_rank):
        return []
    return [RankChange(rank, median_change(a.step_us_by_rank[rank], b.step_us_by_rank[rank],
                                           noise_floor_pct=noise_floor_pct))
            for rank in sorted(a.step_us_by_rank)]


def typical(runs: Sequence[RunFacts]) -> RunFacts:
    """The run whose median step is the middle of its side's (the first of two): the one
    whose ops and kernels explain the side's change."""
    medians = [float(np.median(r.step_us)) if r.step_us else 0.0 for r in runs]
    order = sorted(range(len(runs)), key=lambda i: (medians[i], i))
    return runs[order[(len(order) - 1) // 2]]


def default_noise_floor_pct(a: RunFacts, b: RunFacts) -> float:
    """The between-run spread assumed with one run a side, by device (significance.py)."""
    return CUDA_NOISE_FLOOR_PCT if a.is_cuda and b.is_cuda else CPU_NOISE_FLOOR_PCT


def diff_facts(a: RunFacts | Sequence[RunFacts], b: RunFacts | Sequence[RunFacts], *,
               noise_floor_pct: float | None = None) -> Diff:
    """The diff of two runs' facts, or of two sides' repeats (the pure part of :func:`diff`).
    ``noise_floor_pct`` None: the floor of the runs' device."""
    runs_a = [a] if isinstance(a, RunFacts) else list(a)
    runs_b = [b] if isinstance(b, RunFacts) else list(b)
    one_a, one_b = typical(runs_a), typical(runs_b)
    comparable = comparability(one_a, one_b)
    if comparable.status == "not comparable":
        return Diff(one_a.label, one_b.label, comparable, None, None,
                    metrics=_metrics(one_a, one_b))
    gpu_floor_pct = CUDA_GPU_NOISE_FLOOR_PCT if noise_floor_pct is None else noise_floor_pct
    if noise_floor_pct is None:
        noise_floor_pct = default_noise_floor_pct(one_a, one_b)
    step = unreadable_change(runs_a, runs_b) or repeated_change(
        [r.step_us for r in runs_a], [r.step_us for r in runs_b], noise_floor_pct=noise_floor_pct)
    gpu = (repeated_change([r.gpu_us for r in runs_a], [r.gpu_us for r in runs_b],
                           noise_floor_pct=gpu_floor_pct)
           if one_a.is_cuda and one_b.is_cuda else None)
    step_delta_us = (step.median_b - step.median_a
                     if step.median_a is not None and step.median_b is not None else 0.0)
    return Diff(one_a.label, one_b.label, comparable, step, gpu,
                buckets=bucket_causes(one_a, one_b, step_delta_us),
                ops=op_causes(one_a, one_b, step_delta_us),
                kernels=kernel_causes(one_a, one_b, step_delta_us),
                metrics=_metrics(one_a, one_b),
                ranks=rank_changes(one_a, one_b, noise_floor_pct),
                self_ops=self_op_causes(one_a, one_b, step_delta_us),
                unreadable_sides=damaged_sides(runs_a, runs_b))


Side = Run | str | os.PathLike[str]


def _repeats(path: Path, err: TraceError) -> list[RunFacts]:
    """Every run of a folder of run folders, as repeats of one program (else ``err``)."""
    listed = find_runs(path) if path.is_dir() else None
    if listed is None or len(listed) < 2 or set(listed["kind"]) != {"run"}:
        raise err
    runs = [run_facts(load(p)) for p in sorted(listed["path"])]
    for other in runs[1:]:
        check = comparability(runs[0], other)
        if check.status == "not comparable" or other.name != runs[0].name:
            why = check.blocking[0] if check.blocking else (
                f"function {runs[0].name!r} and {other.name!r}")
            raise TraceError(path, f"its {len(runs)} runs are not repeats of one program "
                                   f"({why})")
    return [replace(r, label=str(path)) for r in runs]


def side_facts(side: Side) -> list[RunFacts]:
    """One side's runs: a loaded run, a run folder or trace, or a folder of repeats."""
    if isinstance(side, Run):
        return [run_facts(side)]
    try:
        return [run_facts(load(Path(side)))]
    except TraceError as err:
        return _repeats(Path(side), err)


def diff(a: Side, b: Side, *, noise_floor_pct: float | None = None) -> Diff:
    """Compare B against A (the baseline); each a loaded :class:`Run`, a path that
    :func:`autoprof.load` takes (a run folder or a trace), or a folder of several run folders
    of one program (repeats, whose spread between runs the interval then measures)."""
    return diff_facts(side_facts(a), side_facts(b), noise_floor_pct=noise_floor_pct)


def gate_answer(result: Diff, gate_pct: float) -> GateAnswer | None:
    """The gate's pass / fail / cannot tell (gate.py); None when the runs are not judged
    (not comparable, or too few readable steps)."""
    judged = result.judged
    if judged is None or judged.verdict == "too few steps":
        return None
    return answer(judged, gate_pct)


def exit_status(result: Diff, gate_pct: float | None, cannot_tell_passes: bool = False) -> int:
    """The CI exit status of a diff (see the module docstring and gate.py)."""
    judged = result.judged
    if judged is None or judged.verdict == "too few steps":
        return EXIT_NOT_COMPARABLE  # a gate never passes a run whose steps it could not read
    if gate_pct is not None:
        found = answer(judged, gate_pct)
        if found.kind == "cannot tell" and cannot_tell_passes:
            return EXIT_OK
        return found.exit_code
    low = judged.ci_low_pct
    if judged.verdict == "slower" and low is not None and low > 0.0:
        return EXIT_REGRESSION
    return EXIT_OK
