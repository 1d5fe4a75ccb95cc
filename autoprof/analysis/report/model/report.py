"""The report: everything the analysis says about one run, as one typed record.

One type for every run: a run analysed rank by rank is a ``Report`` too, with its
``rank_by_rank`` section (``Report`` doc).

``build_report(run)`` builds it; ``autoprof summary --json`` prints its JSON (``Report.to_dict``);
``Report.from_dict`` reads that JSON back into the same type, and the summary's JSON Schema
is generated from it (``model/schema.py``). Times are in microseconds unless the name says
otherwise; the fields are in the order the JSON lists them.
"""

from __future__ import annotations

from autoprof.analysis.kinds import VerdictKind
from autoprof.analysis.report.model.base import UNSET, Json, Model, Num, given
from autoprof.analysis.report.model.ranks import RankByRank
from autoprof.analysis.report.model.rows import (
    Diagnostic,
    Opportunity,
    RankRow,
    StepRow,
    TopOps,
    Where,
)
from autoprof.runfolder.whatif import WhatIfResult


class Breakdown(Model, kw_only=True):
    """Where the mean step's time goes, by bucket (metrics/breakdown.py), and the time between
    two calls of the function."""

    step_us: Num | None = UNSET
    buckets_us: dict[str, Num | None] = UNSET
    buckets_pct: dict[str, Num | None] = UNSET
    steps: int = UNSET
    autoprof_us: Num | None = UNSET
    between_calls_us: Num | None = UNSET
    between_calls_pct: Num | None = UNSET
    between_calls_buckets_us: dict[str, Num | None] | None = UNSET
    between_calls_where: list[Where] = UNSET
    per_step: list[Json] = UNSET
    between_calls_untraced_us: Num | None = UNSET


class Report(Model, kw_only=True):
    """One run's analysis. ``comparison``: a window a watch trigger recorded, compared with its
    healthy window (first key, absent otherwise); ``device``: the manifest's device record,
    else the trace's first device properties, else ``"cuda"`` or null; ``overhead``,
    ``profiler_overhead``, ``efficiency`` and ``memory`` are the metrics' own records.

    ``rank_by_rank``: present only for a run analysed rank by rank (model/ranks.py), whose
    report the reduce fills from its ranks' small results (scale/report.py): the verdict is
    the breakdown rule's over the mean step of every rank, ``gpu_busy_pct`` the ranks' mean,
    the self times their sums, ``is_cuda`` whether any rank has GPU work, ``ranks`` one row
    per rank; the reduce reads no events, so ``steps``, ``diagnostics``, ``top_ops``,
    ``opportunities`` and ``whatif`` are empty,
    ``overhead``, ``profiler_overhead`` and ``efficiency`` are ``{}`` and ``memory`` is null
    (each rank's memory peaks are in its row)."""

    comparison: Json = UNSET
    path: str
    name: str | None
    run_id: str | None
    status: str | None
    world_size: int
    missing_ranks: list[int] = UNSET
    is_cuda: bool
    device: Json | str | None
    trace_paths: list[str]
    events: int
    verdict: VerdictKind
    verdict_reason: str
    verdict_evidence: Json
    gpu_busy_pct: Num | None
    self_cpu_us: Num | None
    self_gpu_us: Num | None
    cpu_gpu_ratio: Num | None
    overhead: Json
    steps: list[StepRow]
    warmup_call_ms: list[Num]
    wait_call_ms: list[Num]
    profiler_start_ms: Num | None = UNSET
    diagnostics: list[Diagnostic]
    top_ops: TopOps
    ranks: list[RankRow]
    straggler_rank: int | None
    breakdown: Breakdown
    opportunities: list[Opportunity]
    profiler_overhead: Json
    efficiency: Json
    whatif: list[WhatIfResult]
    memory: Json | None
    source_lines: Json = UNSET
    rank_by_rank: RankByRank = UNSET

    def best_fix(self) -> WhatIfResult | None:
        """The fix what-if measured as the largest win (``WhatIfResult.is_win``), or None."""
        wins = [r for r in self.whatif if r.is_win()]
        return max(wins, key=lambda r: float(given(r.speedup)), default=None)

    def device_name(self) -> str:
        """The device as the reports name it: the record's name, the string, or ``CPU``."""
        device = self.device.get("name") if isinstance(self.device, dict) else self.device
        return str(device or "CPU")

    def head_facts(self) -> list[str]:
        """The run in a few facts, as the reports' headers show them (unescaped): its id,
        ranks, device, events and, when it has one, its status."""
        ranks = self.world_size or 1
        facts = [str(self.run_id or self.path), f"{ranks} rank{'s' * (ranks > 1)}",
                 self.device_name(), f"{self.events:,} events"]
        if self.status:
            facts.append(f"status {self.status}")
        return facts


class FolderLine(Model, kw_only=True):
    """One run of a folder (``autoprof summary --json FOLDER``): ``error`` when it did not
    load, else ``compare()``'s columns for it."""

    path: str
    name: str | None
    error: str | None
    verdict: str | None = UNSET
    gpu_busy_pct: Num | None = UNSET
    self_cpu_us: Num | None = UNSET
    self_gpu_us: Num | None = UNSET


class FolderSummary(Model, kw_only=True):
    """``autoprof summary --json FOLDER``: one line per run found below ``path``."""

    path: str
    runs: list[FolderLine]
    skipped_not_traces: int = UNSET
