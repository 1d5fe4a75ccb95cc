"""Findings as data: a `Diagnostic` record and the `Check` that produces one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

Severity = Literal["info", "warning", "critical"]
SEVERITY_ORDER: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Diagnostic:
    """One finding: what (`message`), how sure (`evidence`, numbers), what to do (`hint`)."""

    id: str
    severity: Severity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "severity": self.severity, "message": self.message,
                "evidence": dict(self.evidence), "hint": self.hint}


@dataclass(frozen=True)
class Check:
    """A named check: `applies` is its precondition (described by `needs`)."""

    id: str
    needs: str
    applies: Callable[[Analysis], bool]
    find: Callable[[Analysis], Diagnostic | None]




def rounded(value: float | None, digits: int = 2) -> float | None:
    """An evidence number: rounded, None when missing or not finite."""
    return None if value is None or not np.isfinite(value) else round(float(value), digits)
