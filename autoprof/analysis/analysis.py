"""The analysis of one run: every number the checks, the summary, the CLI and the viewer
read, each computed at most once (``Run.analysis`` holds one per loaded run).

``Analysis(data, options)`` reads the loader's record (``loader.load.RunData``, or anything
with the same fields: ``RunLike``) and takes its options as an explicit, typed argument
(``AnalysisOptions``): a CLI flag that changes the analysis reaches it here, never through an
environment variable. It sits above ``diagnose/`` (its ``diagnostics`` run the checks) and
below ``report/`` and the ``Run`` facade.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Protocol

import pandas as pd

from autoprof import env
from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.remote import RemoteFile
from autoprof.analysis.metrics.breakdown import Breakdown
from autoprof.analysis.metrics.efficiency import Efficiency
from autoprof.analysis.metrics.lines import SourceLines
from autoprof.analysis.metrics.memory_use import Memory
from autoprof.analysis.metrics.overhead import Overhead, overhead
from autoprof.analysis.metrics.ranks import rank_table, straggler_from
from autoprof.analysis.metrics.replay.baseline import Reference
from autoprof.analysis.metrics.stats import ranks_of
from autoprof.analysis.metrics.steps import per_step
from autoprof.analysis.metrics.unfilled_steps import without_unfilled_last_steps
from autoprof.analysis.metrics.verdict import Verdict, verdict_from
from autoprof.runfolder import Manifest


@dataclass(frozen=True)
class AnalysisOptions:
    """What a caller may change about the analysis of a run.

    ``peak_tflops`` / ``peak_gbps``: the device's roof for the efficiency analysis, replacing
    the peaks table's figures (None: the table, metrics/peaks.py). A run loaded without
    options gets ``default_options()``.
    """

    peak_tflops: float | None = None
    peak_gbps: float | None = None


def default_options() -> AnalysisOptions:
    """The options of a run loaded without any: the peaks from ``AUTOPROF_PEAK_TFLOPS`` /
    ``AUTOPROF_PEAK_GBPS`` (read by ``autoprof.env``, here at the edge, never by a metric)."""
    return AnalysisOptions(peak_tflops=env.peak_tflops(), peak_gbps=env.peak_gbps())


class RunLike(Protocol):
    """What the analysis reads from a run (``RunData`` and ``Run`` have it)."""

    @property
    def events(self) -> pd.DataFrame: ...

    @property
    def manifest(self) -> dict[str, Any] | None:
        """The manifest as plain JSON values; a run that keeps its typed record (``RunData``
        and ``Run``: ``record``) is read from that instead (``record_of``)."""

    @property
    def path(self) -> str | Path | RemoteFile: ...

    @property
    def name(self) -> str: ...

    @property
    def world_size(self) -> int: ...

    @property
    def trace_paths(self) -> Sequence[str | Path | RemoteFile]: ...

    @property
    def trace_metadata(self) -> Sequence[dict[str, Any]]: ...

    @property
    def memory_events(self) -> pd.DataFrame | None: ...

    @property
    def is_cuda(self) -> bool: ...


def record_of(data: RunLike) -> Manifest | None:
    """The run's typed record: its own (``RunData.record``, ``Run.record``), else the one its
    plain-dict ``manifest`` stands for (a run-like built by hand); None without a manifest."""
    kept = getattr(data, "record", None)
    return kept if isinstance(kept, Manifest) else Manifest.from_view(data.manifest)


class Analysis:
    """Numbers every check, the summary and the viewer may use, each computed at most once."""

    @staticmethod
    def of(run: RunLike, options: AnalysisOptions | None = None) -> Analysis:
        """The run's own analysis when it keeps one (``Run.analysis``), else a new one."""
        kept = getattr(run, "analysis", None)
        if isinstance(kept, Analysis) and options in (None, kept.options):
            return kept
        return Analysis(run, options)

    def __init__(self, data: RunLike, options: AnalysisOptions | None = None) -> None:
        self.data = data
        self.options = options if options is not None else default_options()
        self.record: Manifest | None = record_of(data)  # the typed manifest; None: a trace
        self.events: pd.DataFrame = without_unfilled_last_steps(
            data.events, self.call_region)

    @property
    def local_path(self) -> str | Path | None:
        """The run's path on this machine; None for a run read by URL, whose folder's
        what-if results and source-lines trace are not read (its traces are)."""
        path = self.data.path
        return None if isinstance(path, RemoteFile) else path

    @property
    def call_region(self) -> str | None:
        """The region autoprof wraps the decorated call in: the run's name (metrics/breakdown)."""
        return self.record.name or None if self.record is not None else None

    @cached_property
    def overhead(self) -> Overhead:
        return overhead(self.events, steps=self.steps)

    @cached_property
    def verdict(self) -> Verdict:
        """The run's verdict: its breakdown (call region left out) and the profiler caveat."""
        from autoprof.analysis.metrics.profiler_overhead import verdict_note

        return verdict_from(self.overhead, self.breakdown.mean(),
                            verdict_note(self.profiler_overhead))

    def verdict_for(self, rank: int | None) -> Verdict:
        """The verdict of one rank (None: the run's, ``verdict``); the one route behind
        ``Run.verdict`` and ``autoprof.analysis.verdict``."""
        if rank is None:
            return self.verdict
        return verdict_from(self.overhead_for(rank), self.breakdown.for_rank(rank).mean())

    def overhead_for(self, rank: int | None) -> Overhead:
        return self.overhead if rank is None else overhead(self.events, rank=rank)

    def steps_for(self, rank: int | None) -> pd.DataFrame:
        return self.steps if rank is None else per_step(self.events, rank=rank)

    def ops_for(self, lane: Literal["cpu", "gpu"] | None, rank: int | None) -> pd.DataFrame:
        if lane is None and rank is None:
            return self.ops
        from autoprof.analysis.metrics.ops import self_vs_total

        return self_vs_total(self.events, lane=lane, rank=rank)

    @cached_property
    def breakdown(self) -> Breakdown:
        """Every microsecond of each step in one of seven buckets (metrics/breakdown.py)."""
        from autoprof.analysis.metrics.breakdown import breakdown

        return breakdown(self.events, self.call_region)

    @cached_property
    def opportunities(self) -> list[dict[str, Any]]:
        """The non-compute buckets, each fix's prediction and the catalogue's whole-run
        entries, ranked (diagnose/catalogue.py)."""
        from autoprof.analysis.diagnose.catalogue import ranked_opportunities

        return ranked_opportunities(self)

    @cached_property
    def device_name(self) -> str | None:
        """The device's name: the manifest's, else the traces' ``deviceProperties``; None on
        a CPU-only run (metrics/device.py)."""
        from autoprof.analysis.metrics.device import device_name

        return device_name(self.record, list(self.data.trace_metadata))

    @cached_property
    def graph_input_copy_us(self) -> float:
        """The GPU time a CUDA graph of the call spends copying the call's CUDA inputs into
        its static ones (metrics/replay/changes.py); 0 when the recorder did not read them
        or the device's bandwidth is not known."""
        from autoprof.analysis.metrics.peaks import peak_for
        from autoprof.analysis.metrics.replay.changes import input_copy_us

        nbytes = self.record.call_input_bytes if self.record is not None else None
        if not nbytes:
            return 0.0
        return input_copy_us(nbytes,
                             peak_for(self.device_name, peak_gbps=self.options.peak_gbps).gbps)

    @cached_property
    def reference(self) -> Reference:
        """The untraced times the replay is paced to (metrics/replay/baseline.py): the
        steady untraced call, the time between two untraced calls and the closing sync's own
        cost, read from the manifest (profiler_overhead.reference)."""
        from autoprof.analysis.metrics.profiler_overhead import reference

        return reference(self.record)

    @cached_property
    def between_calls_untraced_us(self) -> float | None:
        """The least time between two untraced warm-up calls, beside the profiled
        `between_calls_us`: what the caller's loop takes without the profiler (the profiled
        time also holds the profiler's own step bookkeeping). None when the run did not time
        it, has no time between calls, or a DataLoader's fetch is its largest part: a loader
        with workers prefetches during each warm-up call, so the gaps between them do not
        show its pace (metrics/replay/baseline.py)."""
        from autoprof.analysis.metrics.replay.baseline import fetch_first

        bd = self.breakdown.mean()
        where: list[dict[str, Any]] = bd.get("between_calls_where") or []  # type: ignore[assignment]
        if bd.get("between_calls_us") is None or fetch_first([w["name"] for w in where]):
            return None
        return self.reference.between_us

    @cached_property
    def rank_attribution(self) -> dict[int, dict[str, Any]]:
        """Per rank: its breakdown, opportunities and verdict (diagnose/opportunities.py)."""
        from autoprof.analysis.diagnose.opportunities import rank_attribution

        return rank_attribution(self.breakdown, self.ranks, self.straggler)

    @cached_property
    def profiler_overhead(self) -> dict[str, Any]:
        """The profiler's share of a call, from the untraced calls (profiler_overhead.py): the
        steps less their time between calls, which an untraced call does not hold."""
        from autoprof.analysis.metrics.profiler_overhead import profiler_overhead

        return profiler_overhead(self.breakdown.within_call(), self.record,
                                 self.overhead.kernels > 0)

    @cached_property
    def steps(self) -> pd.DataFrame:
        return per_step(self.events)

    @cached_property
    def steps_called(self) -> pd.DataFrame:
        """`steps` without the steps that hold no call of the function, for the checks that
        read it (diagnose/called_steps.py)."""
        from autoprof.analysis.diagnose.called_steps import steps_holding_a_call

        return steps_holding_a_call(self)

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
    def source_lines(self) -> SourceLines:
        """Each op's user source line and module, from the run folder's source-lines trace
        (metrics/lines; ``available`` False without one)."""
        from autoprof.analysis.metrics.lines import SourceLines

        return SourceLines(self.local_path, self.events)

    @cached_property
    def diagnostics(self) -> list[Diagnostic]:
        """Every check whose precondition holds, sorted by severity (diagnose/registry.py)."""
        from autoprof.analysis.diagnose.registry import run_checks

        return run_checks(self)

    @cached_property
    def whatif(self) -> list[dict[str, Any]]:
        """The fixes tried on the function (the run folder's whatif.json; [] when none, or
        when the file is unreadable: a warning names it and the rest of the run still reads),
        each fixed run's verdict completed by analysing that run with the same options."""
        return whatif_or_warn(self.local_path, self.options)

    @cached_property
    def efficiency(self) -> Efficiency:
        """Achieved TFLOP/s and GB/s against the device's roof (metrics/efficiency.py)."""
        from autoprof.analysis.metrics.efficiency import efficiency

        return efficiency(self.events, self.device_name, steps=self.steps,
                          peak_tflops=self.options.peak_tflops,
                          peak_gbps=self.options.peak_gbps)

    @cached_property
    def memory(self) -> Memory | None:
        """Peak, timeline, steps and sites of the memory events (metrics/memory_use.py); None
        without ``[memory]`` events (``profile_memory=True`` records them)."""
        from autoprof.analysis.metrics.device import capacities
        from autoprof.analysis.metrics.memory_use import memory_analysis

        meta = list(self.data.trace_metadata)
        return memory_analysis(self.events, self.data.memory_events,
                               capacities(self.record, meta))

    @property
    def memory_timeline(self) -> pd.DataFrame:
        from autoprof.analysis.metrics.memory_use import timeline_of

        return timeline_of(self.memory)  # computed on first use, then kept (memory_use.Memory)

    @property
    def has_gpu(self) -> bool:
        return self.overhead.kernels > 0


def verdict(run: RunLike | pd.DataFrame, rank: int | None = None,
            options: AnalysisOptions | None = None) -> Verdict:
    """The verdict of a run (a ``Run``, a ``RunData``) or of a bare events table, one rank's
    when ``rank`` is given: ``Analysis.verdict_for``, the route ``Run.verdict`` and the summary
    take. A bare table carries no manifest, so no call region and no profiler caveat: pass the
    run to get its own verdict."""
    if isinstance(run, pd.DataFrame):
        from autoprof.analysis.loader.load import RunData

        run = RunData(Path(), run, name="")
    return Analysis.of(run, options).verdict_for(rank)


def diagnose(run: RunLike, options: AnalysisOptions | None = None) -> list[Diagnostic]:
    """Run every check whose precondition holds; findings sorted by severity, then id order."""
    return Analysis.of(run, options).diagnostics


# --- the fixed runs of what-if ---------------------------------------------------------------

def whatif_or_warn(run_path: str | Path | None,
                   options: AnalysisOptions | None = None) -> list[dict[str, Any]]:
    """``loader.whatif.read_whatif``, but a bad file is a warning (``path: problem``) and
    ``[]``: the trace analysis of the run does not depend on it. A fixed run recorded where the
    analysis could not run (a torch-only GPU machine) gets its verdict here."""
    from autoprof.analysis.loader.whatif import read_whatif

    try:
        return with_fixed_verdicts(read_whatif(run_path), run_path, options)
    except TraceError as err:
        warnings.warn(f"{err} (what-if results ignored)", stacklevel=2)
        return []


def with_fixed_verdicts(results: list[dict[str, Any]], run_path: str | Path | None,
                        options: AnalysisOptions | None = None) -> list[dict[str, Any]]:
    """Each result with a ``fixed_run`` but no ``fixed_verdict``, completed from that run
    folder (inside the run's own folder only); one that cannot be loaded says why."""
    out = []
    for record in results:
        fixed_run = record.get("fixed_run")
        if record.get("fixed_verdict") or not isinstance(fixed_run, str) or run_path is None:
            out.append(record)
            continue
        out.append({**record, **_verdict_of(Path(run_path), fixed_run, options)})
    return out


def _verdict_of(run_path: Path, fixed_run: str,
                options: AnalysisOptions | None) -> dict[str, Any]:
    from autoprof.analysis.loader.load import load_data

    folder = run_path / fixed_run
    if not _inside(run_path, fixed_run):
        return {"fixed_verdict_reason": f"fixed_run {fixed_run!r} is outside the run folder"}
    try:
        found = Analysis(load_data(folder), options).verdict
    except (TraceError, OSError) as err:
        return {"fixed_verdict_reason": f"the fixed run could not be loaded: {err}"}
    return {"fixed_verdict": str(found.kind), "fixed_verdict_reason": str(found.reason)}


def _inside(run_path: Path, fixed_run: str) -> bool:
    """Is ``run_path / fixed_run`` inside the run folder, once resolved? An absolute path,
    ``..`` or a symbolic link out of the folder is not: the analysis never loads a run
    outside the folder it was given."""
    if Path(fixed_run).is_absolute() or ".." in Path(fixed_run).parts:
        return False
    try:
        return (run_path / fixed_run).resolve().is_relative_to(run_path.resolve())
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL in the name
        return False

