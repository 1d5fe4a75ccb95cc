"""What a diff needs to know of one run, read once from its report (the typed summary,
report/model), manifest and events.

Everything is per profiled step (``_per_step``), so runs that recorded different numbers of
steps compare directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from autoprof.analysis.diff.user_ops import UserOpFacts, most_common, user_op_facts
from autoprof.analysis.metrics.problem_size import run_size, stated_size
from autoprof.analysis.report.model import Report
from autoprof.analysis.report.model.base import given

if TYPE_CHECKING:
    from autoprof.analysis.run import Run
    from autoprof.runfolder import Manifest


@dataclass(frozen=True)
class OpFacts:
    """One op (by name) of one run, per profiled step."""

    self_cpu_us_per_step: float
    self_device_us_per_step: float
    calls_per_step: float
    input_shapes: str
    input_types: str


@dataclass(frozen=True)
class KernelFacts:
    """One kernel (by name) of one run, per profiled step."""

    us_per_step: float
    launches_per_step: float
    op: str  # the op that launched it most often ("" when unknown)


@dataclass(frozen=True)
class RunFacts:
    label: str
    name: str
    device: str  # the GPU's name, or "CPU"
    is_cuda: bool
    versions: Mapping[str, str]  # torch, cuda (from torch's build tag), python
    options: Mapping[str, Any]
    world_size: int
    step_us: list[float]
    gpu_us: list[float]
    buckets_us: Mapping[str, float]
    launches_per_step: float | None
    memory_peak_bytes: float | None
    mfu_pct: float | None
    problem_size: float | None = None  # the manifest's size, the first op's largest dim, n64/
    ops: Mapping[str, OpFacts] = field(default_factory=dict)
    kernels: Mapping[str, KernelFacts] = field(default_factory=dict)
    # each rank's step times, for runs with ranks (empty for a one-process run)
    step_us_by_rank: Mapping[int, list[float]] = field(default_factory=dict)
    # the outermost ops, each with all it ran rolled up (user_ops.py)
    user_ops: Mapping[str, UserOpFacts] = field(default_factory=dict)
    # what the decorated function was called with (the manifest's call_inputs; None: unknown)
    call_inputs: tuple[str, ...] | None = None
    intra_op_threads: int | None = None
    problem_size_guessed: bool = False  # the first op's largest dim, not the manifest's or n64/
    # the steps the manifest says the traces hold, for a one-process run (None: not said)
    steps_recorded: int | None = None
    host: str | None = None  # the machine's name the manifest records

    @property
    def steps(self) -> int:
        return len(self.step_us)


def _versions(record: Manifest | None) -> dict[str, str]:
    raw = record.versions if record is not None else {}
    versions = {k: str(v) for k, v in raw.items() if v is not None}
    torch_version = versions.get("torch", "")
    if "+" in torch_version:  # 2.11.0+cu130: the build tag names the CUDA (or cpu) build
        versions["cuda"] = torch_version.split("+", 1)[1]
    return versions


def _sum_by_op(events: pd.DataFrame, rows: pd.DataFrame, op_column: str) -> pd.Series:
    """``dur_us`` of ``rows`` summed by the name of the op each points at (``op_column``)."""
    names = events.loc[rows[op_column], "name"].astype(str).to_numpy()
    return rows["dur_us"].groupby(names).sum()


def _op_facts(events: pd.DataFrame, steps: int) -> dict[str, OpFacts]:
    in_step = events["step"] >= 0
    ops = events[(events["cat"] == "cpu_op") & in_step]
    device_us = _sum_by_op(events, events[events["is_gpu_work"] & in_step
                                          & (events["op_row"] >= 0)], "op_row")
    # the CUDA runtime calls an op makes are its own host cost (nested under it, so not in
    # its self time)
    runtime = events[events["cat"].isin(["cuda_runtime", "cuda_driver"]) & in_step
                     & (events["parent"] >= 0)]
    runtime_us = _sum_by_op(events, runtime, "parent")
    facts: dict[str, OpFacts] = {}
    for name, rows in ops.groupby(ops["name"].astype(str), observed=True):
        facts[str(name)] = OpFacts(
            self_cpu_us_per_step=(float(rows["self_us"].sum())
                                  + float(runtime_us.get(name, 0.0))) / steps,
            self_device_us_per_step=float(device_us.get(name, 0.0)) / steps,
            calls_per_step=len(rows) / steps,
            input_shapes=most_common(rows["input_dims"]),
            input_types=most_common(rows["input_types"]),
        )
    return facts


def _kernel_facts(events: pd.DataFrame, steps: int) -> dict[str, KernelFacts]:
    work = events[events["is_gpu_work"] & (events["step"] >= 0)]
    facts: dict[str, KernelFacts] = {}
    for name, rows in work.groupby(work["name"].astype(str), observed=True):
        op_rows = rows["op_row"][rows["op_row"] >= 0]
        op = most_common(events.loc[op_rows, "name"]) if len(op_rows) else ""
        facts[str(name)] = KernelFacts(float(rows["dur_us"].sum()) / steps, len(rows) / steps, op)
    return facts


def _memory_peak_bytes(report: Report) -> float | None:
    """The largest allocated peak over the run's devices (the Memory analysis)."""
    memory = report.memory
    devices = memory.get("devices") if isinstance(memory, Mapping) else None
    peaks = [float(d["peak_allocated_bytes"]) for d in devices or []
             if isinstance(d, Mapping) and isinstance(d.get("peak_allocated_bytes"), int | float)]
    return max(peaks) if peaks else None


def _numbers(values: Iterable[object]) -> list[float]:
    """The values that are numbers, as floats (a missing one, null, is left out)."""
    return [float(v) for v in values if isinstance(v, int | float)]


def _per_step_rows(report: Report) -> list[Mapping[str, Any]]:
    """The breakdown's per-step rows (``Breakdown.per_step``; none when absent)."""
    rows = given(report.breakdown.per_step)
    return [r for r in rows or [] if isinstance(r, Mapping)]


def _step_us(report: Report) -> list[float]:
    return _numbers(r.get("step_us") for r in _per_step_rows(report))


def _launches_per_step(report: Report) -> float | None:
    launches = _numbers(s.launches for s in report.steps)
    return float(pd.Series(launches).median()) if launches else None


def _step_us_by_rank(report: Report) -> dict[int, list[float]]:
    """Each rank's step times from the per-step breakdown rows that name a rank."""
    by_rank: dict[int, list[float]] = {}
    for r in _per_step_rows(report):
        if isinstance(r.get("rank"), int) and isinstance(r.get("step_us"), int | float):
            by_rank.setdefault(int(r["rank"]), []).append(float(r["step_us"]))
    return by_rank if (report.world_size or 1) > 1 else {}


def _problem_size(record: Manifest | None, run: Run) -> float | None:
    size = run_size(record, run.events, str(run.path))
    return None if pd.isna(size) else float(size)


def run_facts(run: Run) -> RunFacts:
    """Everything a diff compares, from one loaded run (its typed report, manifest and
    events)."""
    report = run.report()
    record = run.record
    device = report.device
    device_name = str(device.get("name")) if isinstance(device, Mapping) else "CPU"
    step_us = _step_us(report)
    steps = max(len(step_us), 1)
    buckets = given(report.breakdown.buckets_us) or {}
    mfu = report.efficiency.get("mfu_pct")
    world_size = report.world_size or 1
    return RunFacts(
        label=str(run.path),
        name=str(run.name),
        device=device_name,
        is_cuda=report.is_cuda,
        versions=_versions(record),
        options=dict(record.options) if record is not None else {},
        world_size=world_size,
        step_us=step_us,
        gpu_us=_numbers(s.gpu_work_us for s in report.steps),
        buckets_us={str(k): float(v) for k, v in buckets.items() if v is not None},
        launches_per_step=_launches_per_step(report),
        memory_peak_bytes=_memory_peak_bytes(report),
        mfu_pct=float(mfu) if isinstance(mfu, int | float) else None,
        problem_size=_problem_size(record, run),
        ops=_op_facts(run.events, steps),
        kernels=_kernel_facts(run.events, steps),
        step_us_by_rank=_step_us_by_rank(report),
        user_ops=user_op_facts(run.events, steps),
        call_inputs=record.call_inputs if record is not None else None,
        intra_op_threads=record.intra_op_threads if record is not None else None,
        problem_size_guessed=bool(pd.isna(stated_size(record, str(run.path)))),
        host=record.host if record is not None else None,
        steps_recorded=(record.steps_recorded if record is not None
                        and world_size == 1 else None),
    )
