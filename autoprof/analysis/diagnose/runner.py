"""Findings as data: each check is a small function with an id and a precondition.

`diagnose(run)` computes the shared numbers once (a `Context`), runs every check whose
precondition holds, and returns the findings sorted by severity. The CLI and the viewer both
render these records; nothing else decides what is wrong with a run. The checks themselves
live in `checks.py`; docs/analysis.md describes each id.
"""

from __future__ import annotations

from autoprof.analysis.diagnose.checks import CHECKS
from autoprof.analysis.diagnose.context import Context, RunLike
from autoprof.analysis.diagnose.records import SEVERITY_ORDER, Check, Diagnostic, Severity

__all__ = [
    "Check", "Context", "Diagnostic", "RunLike", "Severity", "checks", "diagnose", "run_checks",
]


def checks() -> list[Check]:
    """Every registered check, in report order."""
    return list(CHECKS)


def diagnose(run: RunLike) -> list[Diagnostic]:
    """Run every check whose precondition holds; findings sorted by severity, then id order."""
    return Context.of(run).diagnostics


def run_checks(ctx: Context) -> list[Diagnostic]:
    """diagnose() on an existing Context (so a caller can reuse its numbers)."""
    found = []
    for position, check in enumerate(CHECKS):
        if not check.applies(ctx):
            continue
        result = check.find(ctx)
        if result is not None:
            found.append((SEVERITY_ORDER[result.severity], position, result))
    return [d for _, _, d in sorted(found, key=lambda t: (t[0], t[1]))]
