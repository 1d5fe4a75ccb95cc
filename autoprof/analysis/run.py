"""``load(path) -> Run`` and ``find_runs(root)``: the front door of the analysis layer.

The facade sits on top: a ``Run`` is the loader's plain record (``loader.load.RunData``) plus
its ``Analysis`` (every number, computed at most once), and each method below is a thin call
into that analysis. Nothing under ``loader/``, ``metrics/``, ``diagnose/`` or ``report/``
imports this module.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from autoprof.analysis.analysis import Analysis, AnalysisOptions, default_options
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.load import Progress, RunData, load_data
from autoprof.analysis.loader.remote import TracePath

if TYPE_CHECKING:
    from autoprof.analysis.diagnose.records import Diagnostic
    from autoprof.analysis.metrics.overhead import Overhead
    from autoprof.analysis.metrics.verdict import Verdict
    from autoprof.analysis.report.model import Report
    from autoprof.runfolder import Manifest


class Run:
    """One loaded run: the loader's record (``data``) and its analysis (``analysis``)."""

    def __init__(self, data: RunData, options: AnalysisOptions | None = None) -> None:
        self.data = data
        self.options = options if options is not None else default_options()
        self._analysis: Analysis | None = None

    # --- the record ---------------------------------------------------------------------

    @property
    def path(self) -> TracePath:
        """The run's folder or trace: a ``Path``, or a ``RemoteFile`` when read by URL."""
        return self.data.path

    @property
    def events(self) -> pd.DataFrame:
        return self.data.events

    @events.setter
    def events(self, events: pd.DataFrame) -> None:
        """A new events table: the next ``analysis`` starts from it."""
        self.data = dataclasses.replace(self.data, events=events)
        self._analysis = None

    @property
    def name(self) -> str:
        return self.data.name

    @property
    def record(self) -> Manifest | None:
        """The run's typed manifest (``autoprof.runfolder.Manifest``); None for a plain
        trace. Read its fields (``record.warmup_call_ms``, ``record.schedule``)."""
        return self.data.record

    @property
    def manifest(self) -> dict[str, Any] | None:
        """The manifest as plain JSON values (``record.to_dict()``): the one dict view, for
        printing or JSON; None for a plain trace."""
        return self.data.manifest

    @property
    def trace_paths(self) -> list[TracePath]:
        return self.data.trace_paths

    @property
    def trace_metadata(self) -> list[dict[str, Any]]:
        return self.data.trace_metadata

    @property
    def world_size(self) -> int:
        return self.data.world_size

    @property
    def missing_ranks(self) -> tuple[int, ...]:
        """Ranks of ``world_size`` with no trace in this run (never silently fewer)."""
        return self.data.missing_ranks

    @property
    def load_warnings(self) -> list[str]:
        return self.data.load_warnings

    @property
    def memory_events(self) -> pd.DataFrame:
        return self.data.memory_events

    @property
    def is_cuda(self) -> bool:
        """True when the run has GPU activity, or its manifest or traces name a device."""
        return self.data.is_cuda

    def __repr__(self) -> str:
        return (f"Run(path={str(self.path)!r}, name={self.name!r}, events={len(self.events)}, "
                f"world_size={self.world_size}, is_cuda={self.is_cuda})")

    # --- the analysis -------------------------------------------------------------------

    @property
    def analysis(self) -> Analysis:
        """This run's analysis: every metric computed at most once, shared by the methods
        below, the summary, the CLI and the viewer. Assigning new ``events`` starts a new one."""
        if self._analysis is None:
            self._analysis = Analysis(self.data, self.options)
        return self._analysis

    def ops(
        self, lane: Literal["cpu", "gpu"] | None = None, rank: int | None = None
    ) -> pd.DataFrame:
        """Self vs total per op (metrics/ops.py); one lane or rank when given."""
        return self.analysis.ops_for(lane, rank)

    def steps(self, rank: int | None = None) -> pd.DataFrame:
        """One row per profiled step (metrics/steps.py); one rank's when given."""
        return self.analysis.steps_for(rank)

    def overhead(self, rank: int | None = None) -> Overhead:
        """The overhead picture (metrics/overhead.py); one rank's when given."""
        return self.analysis.overhead_for(rank)

    def verdict(self, rank: int | None = None) -> Verdict:
        """``autoprof.analysis.verdict(self, rank)``: the same function, the same inputs."""
        return self.analysis.verdict_for(rank)

    def diagnostics(self) -> list[Diagnostic]:
        return self.analysis.diagnostics

    def ranks(self) -> pd.DataFrame:
        return self.analysis.ranks

    def efficiency(self) -> pd.DataFrame:
        """Per kernel name: FLOPs, bytes, TFLOP/s, GB/s, shares of the device's peak,
        arithmetic intensity and roofline ``bound`` (metrics/efficiency.py)."""
        return self.analysis.efficiency.kernels

    def memory(self) -> pd.DataFrame:
        """The memory timeline (ts_us, rank, device, allocated_bytes, reserved_bytes, step);
        no rows without ``[memory]`` events (record with ``profile_memory=True``)."""
        return self.analysis.memory_timeline

    def breakdown(self, rank: int | None = None) -> pd.DataFrame:
        """Per (rank, step): step_us and the seven buckets it splits into, in microseconds
        (metrics/breakdown.py); one rank's steps when `rank` is given."""
        return self.analysis.breakdown.for_rank(rank).steps

    @property
    def straggler_rank(self) -> int | None:
        return self.analysis.straggler

    def summary(self) -> dict[str, Any]:
        """The JSON of ``summarize(self)`` (its ``Report.to_dict()``): what ``autoprof summary
        --json`` prints; cached beside the first trace (see report/summary_cache)."""
        from autoprof.analysis.report.summary_cache import cached_summary

        return cached_summary(self)

    def report(self) -> Report:
        """The summary as the typed record (report/model): ``Report.from_dict(summary())``."""
        from autoprof.analysis.report.build import build_report

        return build_report(self)

    def _repr_html_(self) -> str:
        """In a notebook: verdict, breakdown bar, opportunities, best measured fix, findings."""
        from autoprof.analysis.report.notebook import run_html

        return run_html(self)

    def _repr_markdown_(self) -> str:
        """In a notebook: the same as ``autoprof summary --format markdown``."""
        from autoprof.analysis.report.notebook import run_markdown

        return run_markdown(self)


def load(
    path: str | Path, progress: Progress | None = None, *, root: str | Path | None = None,
    options: AnalysisOptions | None = None,
) -> Run:
    """Load a run folder, a trace file or a folder of per-rank traces into a Run; ``path``
    may be an fsspec URL (``s3://bucket/run``, ``memory://...``; ``pip install fsspec``).

    ``progress(fraction, message)`` is called as big traces load. With ``root``, ``path`` and
    every trace must resolve inside ``root``. ``options`` reach the run's analysis (peaks).
    Bad input raises TraceError (one line).
    """
    return Run(load_data(path, progress, root=root), options)


def find_runs(root: str | Path) -> pd.DataFrame:
    """One row per run folder or loose trace under ``root``; see loader/discover.py for the
    columns."""
    from autoprof.analysis.loader.discover import discover

    return discover(Path(root))


__all__ = ["Run", "TraceError", "find_runs", "load"]
