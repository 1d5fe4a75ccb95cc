"""The analysis of one run: every number the checks, the summary, the CLI and the viewer
read, each computed at most once (``Run.analysis`` holds one per loaded run)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.metrics.breakdown import Breakdown
from autoprof.analysis.metrics.efficiency import Efficiency
from autoprof.analysis.metrics.memory import Memory
from autoprof.analysis.metrics.overhead import Overhead, overhead
from autoprof.analysis.metrics.ranks import rank_table, straggler_from
from autoprof.analysis.metrics.stats import ranks_of
from autoprof.analysis.metrics.steps import per_step
from autoprof.analysis.metrics.verdict import Verdict, verdict_from


class RunLike(Protocol):
    """What the analysis reads from a run (autoprof.analysis.Run has it)."""

    @property
    def events(self) -> pd.DataFrame: ...

    @property
    def manifest(self) -> dict[str, Any] | None: ...

    @property
    def path(self) -> str | Path: ...

    @property
    def name(self) -> str: ...

    @property
    def world_size(self) -> int: ...

    @property
    def trace_paths(self) -> Sequence[str | Path]: ...

    @property
    def trace_metadata(self) -> Sequence[dict[str, Any]]: ...

    @property
    def memory_events(self) -> pd.DataFrame | None: ...

    @property
    def is_cuda(self) -> bool: ...


class Context:
    """Numbers every check may use, each computed at most once."""

    @staticmethod
    def of(run: RunLike) -> Context:
        """The run's own analysis when it keeps one (``Run.analysis``), else a new one."""
        from autoprof.analysis.loader.run import Run

        return run.analysis if isinstance(run, Run) else Context(run)

    def __init__(self, run: RunLike) -> None:
        self.run = run
        self.events: pd.DataFrame = run.events
        manifest = run.manifest
        self.manifest: dict[str, Any] = manifest if isinstance(manifest, dict) else {}

    @cached_property
    def overhead(self) -> Overhead:
        return overhead(self.events, steps=self.steps)

    @cached_property
    def verdict(self) -> Verdict:
        from autoprof.analysis.metrics.profiler_overhead import verdict_note

        return verdict_from(self.overhead, self.breakdown.mean(),
                            verdict_note(self.profiler_overhead))

    @cached_property
    def breakdown(self) -> Breakdown:
        """Every microsecond of each step in one of seven buckets (metrics/breakdown.py)."""
        from autoprof.analysis.metrics.breakdown import breakdown

        name = self.manifest.get("name")
        return breakdown(self.events, name if isinstance(name, str) else None)

    @cached_property
    def opportunities(self) -> list[dict[str, Any]]:
        """The non-compute buckets ranked by time per step (diagnose/opportunities.py)."""
        from autoprof.analysis.diagnose.opportunities import opportunities

        return opportunities(self.breakdown)

    @cached_property
    def profiler_overhead(self) -> dict[str, Any]:
        """The profiler's share of a step, from the untraced calls (profiler_overhead.py)."""
        from autoprof.analysis.metrics.profiler_overhead import profiler_overhead

        return profiler_overhead(self.breakdown, self.manifest, self.overhead.kernels > 0)

    @cached_property
    def steps(self) -> pd.DataFrame:
        return per_step(self.events)

    @cached_property
    def ranks(self) -> pd.DataFrame:
        ranks = ranks_of(self.events)
        reuse = {ranks[0]: self.overhead} if len(ranks) == 1 else None
        return rank_table(self.events, reuse, self.breakdown)

    @cached_property
    def straggler(self) -> int | None:
        return straggler_from(self.ranks)

    @cached_property
    def ops(self) -> pd.DataFrame:
        """Self vs total per op, every rank and lane (metrics/ops.py)."""
        from autoprof.analysis.metrics.ops import self_vs_total

        return self_vs_total(self.events)

    @cached_property
    def diagnostics(self) -> list[Diagnostic]:
        """Every check whose precondition holds, sorted by severity (diagnose/runner.py)."""
        from autoprof.analysis.diagnose.runner import run_checks

        return run_checks(self)

    @cached_property
    def whatif(self) -> list[dict[str, Any]]:
        """The fixes tried on the function (the run folder's whatif.json; [] when none, or
        when the file is unreadable: a warning names it and the rest of the run still reads)."""
        from autoprof.analysis.loader.whatif import whatif_or_warn

        return whatif_or_warn(self.run.path)

    @cached_property
    def efficiency(self) -> Efficiency:
        """Achieved TFLOP/s and GB/s against the device's roof (metrics/efficiency.py)."""
        from autoprof.analysis.metrics.efficiency import device_name, efficiency

        device = device_name(self.manifest, list(self.run.trace_metadata))
        return efficiency(self.events, device, steps=self.steps)

    @cached_property
    def memory(self) -> Memory | None:
        """Peak, timeline, steps and sites of the memory events (metrics/memory.py); None
        without ``[memory]`` events (``profile_memory=True`` records them)."""
        from autoprof.analysis.metrics.memory import capacities, memory_analysis

        meta = list(self.run.trace_metadata)
        return memory_analysis(self.events, self.run.memory_events,
                               capacities(self.manifest, meta))

    @property
    def has_gpu(self) -> bool:
        return self.overhead.kernels > 0
