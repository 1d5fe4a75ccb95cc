"""autoprof's analysis layer: any torch.profiler trace -> one events table -> explanations.

Four stages, each a subpackage that only reads from the ones before it:

- ``loader/``: a path -> the events table (inputs, manifest, decode, columns, nesting, events,
  merge, cache, discover, run);
- ``metrics/``: the events table -> numbers (ops, steps, overhead, verdict, ranks, compare);
- ``diagnose/``: numbers -> findings (the per-run context, the checks);
- ``report/``: everything -> what users read (summary, key_averages tables).

Never imports torch, streamlit or altair. docs/architecture.md draws the layout.
"""

from __future__ import annotations

from autoprof.analysis.diagnose.context import Context
from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.diagnose.runner import diagnose
from autoprof.analysis.loader.decode import TraceFile, read_trace
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.events import build_events
from autoprof.analysis.loader.run import Run, find_runs, load
from autoprof.analysis.metrics.compare import compare
from autoprof.analysis.metrics.ops import self_vs_total
from autoprof.analysis.metrics.overhead import Overhead, overhead
from autoprof.analysis.metrics.ranks import rank_table, straggler_rank
from autoprof.analysis.metrics.steps import per_step
from autoprof.analysis.metrics.verdict import Verdict, verdict
from autoprof.analysis.report.summary import summarize
from autoprof.analysis.report.tables import format_table, write_tables

__all__ = [
    "Context",
    "Diagnostic",
    "Overhead",
    "Run",
    "TraceError",
    "TraceFile",
    "Verdict",
    "build_events",
    "compare",
    "diagnose",
    "find_runs",
    "format_table",
    "load",
    "overhead",
    "per_step",
    "rank_table",
    "read_trace",
    "self_vs_total",
    "straggler_rank",
    "summarize",
    "verdict",
    "write_tables",
]
