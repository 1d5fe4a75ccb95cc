"""A triggered window (``@autoprof(watch=...)``) against its healthy window: what its summary
leads with. The manifest's ``trigger`` names the healthy run (the first window of the same
function, a run folder beside it); the comparison is ``autoprof diff HEALTHY TRIGGERED``:
how much slower, how sure, and why (its causes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoprof.analysis.diff.render import render_markdown, render_text
from autoprof.analysis.diff.result import Diff, diff
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.run import Run
from autoprof.runfolder.trigger import TriggerRecord
from autoprof.units import safe_text


@dataclass(frozen=True)
class Lead:
    """The comparison a triggered window's summary starts with; ``problem`` (and no diff)
    when the healthy window could not be read."""

    trigger: TriggerRecord
    healthy_path: Path
    result: Diff | None
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"trigger": self.trigger.to_json(), "healthy_run": str(self.healthy_path),
                "problem": self.problem,
                "diff": None if self.result is None else self.result.to_json()}

    def _head(self) -> str:
        return (f"TRIGGERED WINDOW {self.trigger.window}: recorded again "
                f"({self.trigger.describe()}); against the healthy window "
                f"{self.trigger.healthy_run_id}")

    def text(self) -> str:
        body = (f"  {self.problem}\n" if self.result is None
                else "".join(f"  {line}\n" for line in render_text(self.result).splitlines()))
        return safe_text(self._head()) + "\n" + body + "\n"

    def markdown(self) -> str:
        body = (f"{self.problem}\n" if self.result is None else render_markdown(self.result))
        return f"## {safe_text(self._head())}\n\n{body}\n"


def trigger_of(run: Run) -> TriggerRecord | None:
    """The run's ``trigger`` record, or None (not a triggered window, or garbled)."""
    record = run.record
    return None if record is None else TriggerRecord.from_manifest(record.extra)


def lead(run: Run) -> Lead | None:
    """The comparison against the healthy window, or None when ``run`` was not triggered.
    A healthy window gone or unreadable is said in ``problem``, never raised."""
    trigger = trigger_of(run)
    if trigger is None:
        return None
    if not isinstance(run.path, Path):  # a run read where it lies (a URL): not looked for
        return Lead(trigger, Path(trigger.healthy_run_id), None,
                    "the healthy window is read beside a local run folder only")
    healthy = run.path.parent / trigger.healthy_run_id
    if not healthy.is_dir():
        return Lead(trigger, healthy, None, f"{healthy}: the healthy window is not there")
    try:
        return Lead(trigger, healthy, diff(healthy, run))
    except TraceError as err:
        return Lead(trigger, healthy, None, str(err))
    except OSError as err:
        return Lead(trigger, healthy, None, f"{healthy}: {err.strerror or err}")
