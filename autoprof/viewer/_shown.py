"""What the viewer shows for one chosen run, and the one place that tells its two kinds apart.

A run loads as one events table (a ``Run``: every page draws it) or, past a few rank traces
(``analysis/scale/auto.py``), as the reduce of its ranks analysed one by one (a
``RunAnswer``: the Overview and Ranks pages draw it, the other pages say where to look).
``Shown`` is either; ``one_table`` and ``rank_by_rank`` are the only tests of which it is, so
a page asks for the kind it draws and gets that type, or None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from autoprof.analysis.scale.reduce import RunAnswer

if TYPE_CHECKING:
    from autoprof.analysis import Run
    from autoprof.analysis.report.model import Report

Shown: TypeAlias = "Run | RunAnswer"


def one_table(shown: Shown | None) -> Run | None:
    """The run as one events table, or None (not loaded, or analysed rank by rank)."""
    return None if shown is None or isinstance(shown, RunAnswer) else shown


def rank_by_rank(shown: Shown | None) -> RunAnswer | None:
    """The run's ranks analysed one by one, or None (not loaded, or one events table)."""
    return shown if isinstance(shown, RunAnswer) else None


@dataclass
class Loaded:
    """The outcome of loading one run: what the viewer shows of it, or the error line."""

    path: Path
    label: str
    run: Shown | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.run is not None

    @property
    def one_table(self) -> Run | None:
        return one_table(self.run)

    @property
    def rank_by_rank(self) -> RunAnswer | None:
        return rank_by_rank(self.run)


def report_row(report: Report) -> dict[str, Any]:
    """The runs list's row of a run, from its report: the verdict, its one-line reason and
    the device's name (``CPU`` for a run without GPU work, blank when it has no name)."""
    device = report.device.get("name") if isinstance(report.device, dict) else None
    return {"verdict": report.verdict, "verdict_reason": report.verdict_reason,
            "device": str(device) if device else "" if report.is_cuda else "CPU"}


def answer_row(answer: RunAnswer) -> dict[str, Any]:
    """The runs list's row for a run analysed rank by rank: its report's row, the reason
    leading with the ranks analysed and the straggler."""
    row = report_row(answer.report())
    straggler = ("no straggler" if answer.straggler_rank is None
                 else f"straggler rank {answer.straggler_rank}")
    row["verdict_reason"] = (f"{len(answer.ranks)} ranks analysed one by one, {straggler}: "
                             f"{row['verdict_reason']}")
    return row
