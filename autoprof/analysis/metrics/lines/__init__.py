"""Which line of the user's code each op came from: the source-lines trace that autoprof
records in one unmeasured step (``lines.<worker>.json.gz``, written by
``autoprof.record.lines``), read (:mod:`.trace`), matched to the measured steps' ops by order
and name (:mod:`.match`), and summed per line (:mod:`.table`)."""

from autoprof.analysis.metrics.lines.match import Attribution, attribute_run
from autoprof.analysis.metrics.lines.source import (
    SourceLines,
    file_lines,
    files_by_time,
    ops_with_lines,
    with_diagnostic_lines,
    with_top_ops_lines,
    with_where_lines,
)
from autoprof.analysis.metrics.lines.table import line_times, op_lines
from autoprof.analysis.metrics.lines.trace import LinesOp, find_lines_files, read_lines_trace

__all__ = [
    "Attribution", "LinesOp", "SourceLines", "attribute_run", "file_lines", "files_by_time",
    "find_lines_files", "line_times", "op_lines", "ops_with_lines", "read_lines_trace",
    "with_diagnostic_lines", "with_top_ops_lines", "with_where_lines",
]
