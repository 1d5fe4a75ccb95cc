"""``autoprof diff A B``: is B faster, slower or the same as A, how sure, and why."""

from autoprof.analysis.diff.causes import Cause
from autoprof.analysis.diff.comparability import Comparability, Difference
from autoprof.analysis.diff.facts import RunFacts, run_facts
from autoprof.analysis.diff.gate import EXIT_CANNOT_TELL, GateAnswer
from autoprof.analysis.diff.render import render_markdown, render_text
from autoprof.analysis.diff.result import (
    Diff,
    Metric,
    RankChange,
    diff,
    diff_facts,
    exit_status,
    gate_answer,
)
from autoprof.analysis.diff.significance import Change, median_change, repeated_change
from autoprof.analysis.report.schema import DIFF_SCHEMA_VERSION

__all__ = [
    "DIFF_SCHEMA_VERSION",
    "EXIT_CANNOT_TELL",
    "Cause",
    "Change",
    "Comparability",
    "Diff",
    "Difference",
    "GateAnswer",
    "Metric",
    "RankChange",
    "RunFacts",
    "diff",
    "diff_facts",
    "exit_status",
    "gate_answer",
    "median_change",
    "repeated_change",
    "render_markdown",
    "render_text",
    "run_facts",
]
