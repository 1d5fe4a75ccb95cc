"""autoprof's analysis layer: any torch.profiler trace -> one events table -> explanations.

Layers, top to bottom; a module imports only from the layers below it (imports used only for
annotations sit under ``TYPE_CHECKING``):

- ``run``: the facade, ``Run`` (the loader's record plus its analysis), ``load``, ``find_runs``;
- ``report/``: everything -> what users read (summary, text, key_averages tables, runs side by
  side);
- ``analysis``: ``Analysis(data, options)``, every number of one run, each computed at most
  once, with its typed ``AnalysisOptions``;
- ``diagnose/``: numbers -> findings (``Diagnostic``) and fix suggestions;
- ``metrics/``: the events table -> numbers (ops, steps, overhead, breakdown, verdict, ranks,
  efficiency, memory use);
- ``loader/``: a path -> the events table (``loader/formats/`` reads each trace format).

Never imports torch, streamlit or altair. docs/architecture.md draws the layout.

The names below resolve on first use (PEP 562), so importing one module of the layer (a
loader module in the decode helper's process, ``loader/helper.py``) does not import them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoprof._lazy import lazy_names

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis, AnalysisOptions, verdict
    from autoprof.analysis.diagnose.records import Diagnostic
    from autoprof.analysis.loader.decode import TraceFile, read_trace
    from autoprof.analysis.loader.errors import TraceError
    from autoprof.analysis.loader.events import build_events
    from autoprof.analysis.loader.load import RunData, load_data
    from autoprof.analysis.metrics.ops import self_vs_total
    from autoprof.analysis.metrics.overhead import Overhead, overhead
    from autoprof.analysis.metrics.ranks import rank_table, straggler_rank
    from autoprof.analysis.metrics.steps import per_step
    from autoprof.analysis.metrics.verdict import Verdict
    from autoprof.analysis.report.build import build_report
    from autoprof.analysis.report.model import Report
    from autoprof.analysis.report.side_by_side import compare
    from autoprof.analysis.report.summary import summarize
    from autoprof.analysis.report.tables import format_table, write_tables
    from autoprof.analysis.run import Run, find_runs, load

# name -> module that defines it (``diagnose()`` is ``autoprof.analysis.analysis.diagnose``:
# here the name is the ``diagnose/`` package)
_LAZY: dict[str, str] = {
    "Analysis": "autoprof.analysis.analysis",
    "AnalysisOptions": "autoprof.analysis.analysis",
    "verdict": "autoprof.analysis.analysis",
    "Diagnostic": "autoprof.analysis.diagnose.records",
    "TraceFile": "autoprof.analysis.loader.decode",
    "read_trace": "autoprof.analysis.loader.decode",
    "TraceError": "autoprof.analysis.loader.errors",
    "build_events": "autoprof.analysis.loader.events",
    "RunData": "autoprof.analysis.loader.load",
    "load_data": "autoprof.analysis.loader.load",
    "self_vs_total": "autoprof.analysis.metrics.ops",
    "Overhead": "autoprof.analysis.metrics.overhead",
    "overhead": "autoprof.analysis.metrics.overhead",
    "rank_table": "autoprof.analysis.metrics.ranks",
    "straggler_rank": "autoprof.analysis.metrics.ranks",
    "per_step": "autoprof.analysis.metrics.steps",
    "Verdict": "autoprof.analysis.metrics.verdict",
    "build_report": "autoprof.analysis.report.build",
    "Report": "autoprof.analysis.report.model",
    "compare": "autoprof.analysis.report.side_by_side",
    "summarize": "autoprof.analysis.report.summary",
    "format_table": "autoprof.analysis.report.tables",
    "write_tables": "autoprof.analysis.report.tables",
    "Run": "autoprof.analysis.run",
    "find_runs": "autoprof.analysis.run",
    "load": "autoprof.analysis.run",
}

__all__ = [
    "Analysis",
    "AnalysisOptions",
    "Diagnostic",
    "Overhead",
    "Run",
    "Report",
    "RunData",
    "TraceError",
    "TraceFile",
    "Verdict",
    "build_events",
    "compare",
    "find_runs",
    "format_table",
    "load",
    "load_data",
    "overhead",
    "per_step",
    "rank_table",
    "read_trace",
    "build_report",
    "self_vs_total",
    "straggler_rank",
    "summarize",
    "verdict",
    "write_tables",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
