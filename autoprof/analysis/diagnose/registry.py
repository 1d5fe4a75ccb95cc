"""Findings as data: each check is a small function with an id and a precondition.

``run_checks(analysis)`` runs every check in ``CHECKS`` (checks.py) whose precondition holds
on the run's ``Analysis`` and returns the findings sorted by severity. The CLI and the viewer
both render these records; nothing else decides what is wrong with a run. docs/analysis.md
describes each id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoprof.analysis.diagnose.checks import CHECKS
from autoprof.analysis.diagnose.records import SEVERITY_ORDER, Check, Diagnostic

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

__all__ = ["checks", "run_checks"]


def checks() -> list[Check]:
    """Every registered check, in report order."""
    return list(CHECKS)


def run_checks(analysis: Analysis) -> list[Diagnostic]:
    """Every check whose precondition holds on ``analysis``; findings sorted by severity,
    then by the checks' order."""
    found = []
    for position, check in enumerate(CHECKS):
        if not check.applies(analysis):
            continue
        result = check.find(analysis)
        if result is not None:
            found.append((SEVERITY_ORDER[result.severity], position, result))
    return [d for _, _, d in sorted(found, key=lambda t: (t[0], t[1]))]
