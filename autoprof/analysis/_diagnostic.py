"""The types of the diagnostics: a finding, a check, and the numbers checks share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol

import pandas as pd

from autoprof.analysis._stats import ranks_of
from autoprof.analysis.overhead import Overhead, overhead
from autoprof.analysis.ranks import rank_table, straggler_from
from autoprof.analysis.steps import per_step
from autoprof.analysis.verdict import Verdict, verdict_from

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


class RunLike(Protocol):
    """What diagnose needs from a run (autoprof.analysis.Run has it)."""

    @property
    def events(self) -> pd.DataFrame: ...

    @property
    def manifest(self) -> dict[str, Any] | None: ...


class Context:
    """Numbers every check may use, each computed at most once."""

    def __init__(self, run: RunLike) -> None:
        self.run = run
        self.events: pd.DataFrame = run.events
        manifest = getattr(run, "manifest", None)
        self.manifest: dict[str, Any] = manifest if isinstance(manifest, dict) else {}

    @cached_property
    def overhead(self) -> Overhead:
        return overhead(self.events, steps=self.steps)

    @cached_property
    def verdict(self) -> Verdict:
        return verdict_from(self.overhead)

    @cached_property
    def steps(self) -> pd.DataFrame:
        return per_step(self.events)

    @cached_property
    def ranks(self) -> pd.DataFrame:
        ranks = ranks_of(self.events)
        reuse = {ranks[0]: self.overhead} if len(ranks) == 1 else None
        return rank_table(self.events, reuse)

    @cached_property
    def straggler(self) -> int | None:
        return straggler_from(self.ranks)

    @property
    def has_gpu(self) -> bool:
        return self.overhead.kernels > 0


@dataclass(frozen=True)
class Check:
    """A named check: `applies` is its precondition (described by `needs`)."""

    id: str
    needs: str
    applies: Callable[[Context], bool]
    find: Callable[[Context], Diagnostic | None]


