"""A triggered window (``@autoprof(watch=...)``) against its healthy window: what its summary
leads with. The manifest's ``trigger`` names the healthy run (the first window of the same
function, a run folder beside it). How much slower, and how sure, comes first and from the
untraced step times the watcher timed (untraced.py); the comparison of the profiled steps,
``autoprof diff HEALTHY TRIGGERED``, comes after it as the why (its ops, buckets and kernels
in the direction of the untraced change), its step-time line labelled as the profiled
steps': a few steps a side, inflated by the profiler, which cannot settle the first
question."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from autoprof.analysis.diff.causes import Cause
from autoprof.analysis.diff.render import (
    _cause_line,
    _change_line,
    _comparability_lines,
    _md_escape,
    _md_rows,
    _metric_lines,
)
from autoprof.analysis.diff.result import Diff, diff
from autoprof.analysis.diff.untraced import Untraced, untraced
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.run import Run
from autoprof.runfolder.trigger import TriggerRecord
from autoprof.units import safe_text

# the profiled steps this many times the untraced step, or more: the note on the profiler's
# inflation is written
INFLATED_RATIO = 1.25
WHY_ROWS = 5
SHARE_NOTE = ("each row's change is per profiled step, against the untraced step's change "
              "(rows overlap and move both ways: they need not add to 100%)")


@dataclass(frozen=True)
class Lead:
    """The comparison a triggered window's summary starts with; ``problem`` (and no diff)
    when the healthy window could not be read. ``untraced`` is computed once, from the
    trigger alone."""

    trigger: TriggerRecord
    healthy_path: Path
    result: Diff | None
    problem: str | None = None

    @cached_property
    def untraced(self) -> Untraced:
        return untraced(self.trigger)

    @property
    def inflation(self) -> tuple[float, float] | None:
        """The profiled step's median over the untraced step's, healthy and triggered sides
        (None when either is unknown)."""
        step, u = None if self.result is None else self.result.step, self.untraced
        if (step is None or step.median_a is None or step.median_b is None
                or not u.before_ms or not u.after_ms):
            return None
        return step.median_a / 1e3 / u.before_ms, step.median_b / 1e3 / u.after_ms

    def to_json(self) -> dict[str, Any]:
        inflation = self.inflation
        return {"trigger": self.trigger.to_json(), "healthy_run": str(self.healthy_path),
                "verdict": self.untraced.verdict, "untraced": self.untraced.to_json(),
                "profiled_over_untraced": None if inflation is None else list(inflation),
                "why": [c.to_json() for c in self.why_ops],
                "problem": self.problem,
                "diff": None if self.result is None else self.result.to_json()}

    def _head(self) -> str:
        return (f"TRIGGERED WINDOW {self.trigger.window}: recorded again "
                f"({self.trigger.describe()}); against the healthy window "
                f"{self.trigger.healthy_run_id}")

    def _verdict(self) -> str:
        return (f"VERDICT: {self.untraced.verdict} (the untraced step time: the watcher's own "
                "timing of every call, no profiler)")

    @property
    def _delta_us(self) -> float | None:
        u = self.untraced
        return None if u.before_ms is None or u.after_ms is None else (
            (u.after_ms - u.before_ms) * 1e3)

    def _shared(self, rows: list[Cause]) -> list[Cause]:
        """The rows, each share against the untraced step's change (the profiled step's
        change is not the job's)."""
        delta = self._delta_us
        return [replace(c, share_pct=c.delta_us / delta * 100 if delta else None)
                for c in rows]

    @property
    def why_ops(self) -> list[Cause]:
        """The profiled steps' ops that moved in the direction of the untraced change,
        largest first (the diff's own when the untraced change is unknown)."""
        if self.result is None:
            return []
        delta = self._delta_us
        if not delta:
            return self.result.why
        sign = 1.0 if delta > 0 else -1.0
        return self._shared([c for c in self.result.ops if c.ranked_us * sign > 0][:WHY_ROWS])

    def _tables(self) -> list[tuple[str, list[Cause]]]:
        d = self.result
        assert d is not None
        return [("OPS (the direction of the untraced change, largest first)", self.why_ops),
                ("BUCKETS (mean per profiled step)",
                 self._shared([c for c in d.buckets if c.delta_us])),
                ("KERNELS (per profiled step)", self._shared(d.kernels[:WHY_ROWS]))]

    def _why_title(self) -> str:
        d = self.result
        assert d is not None
        return f"WHY: the profiled steps (autoprof diff {d.a} -> {d.b})"

    def _profiled_lines(self) -> list[str]:
        """The profiled steps' comparability and step time (labelled as theirs), and the
        profiler's inflation when it is large."""
        d = self.result
        assert d is not None
        lines = _comparability_lines(d)
        if d.step is not None:
            lines.append(_change_line("profiled step time", d.step))
        if d.gpu is not None:
            lines.append(_change_line("profiled GPU time per step", d.gpu))
        inflation = self.inflation
        if inflation is not None and max(inflation) >= INFLATED_RATIO:
            lines.append(f"the profiled steps take {inflation[0]:.2f}x (healthy) and "
                         f"{inflation[1]:.2f}x (triggered) the untraced step: the profiler's "
                         "cost inflates them, their change is not the job's (the verdict is "
                         "the untraced step's)")
        return lines + [line.strip() for line in _metric_lines(d)]

    def text(self) -> str:
        lines = [self._head(), "  " + self._verdict(), "    " + self.untraced.line()]
        if self.result is None:
            lines.append(f"  {self.problem}")
        else:
            lines += ["  " + self._why_title(), *("    " + x for x in self._profiled_lines())]
            tables = [(t, rows) for t, rows in self._tables() if rows]
            if tables:
                lines.append("    " + SHARE_NOTE)
            for title, rows in tables:
                lines += ["", "  " + title, *("  " + _cause_line(c).replace(
                    "against the step's change", "of the untraced change") for c in rows)]
        return "".join(safe_text(line) + "\n" for line in lines) + "\n"

    def markdown(self) -> str:
        lines = [f"## {self._head()}", "", f"**{_md_escape(self._verdict())}**", "",
                 f"- {_md_escape(self.untraced.line())}"]
        if self.result is None:
            lines.append(f"- {_md_escape(self.problem or '')}")
        else:
            lines += ["", f"### {_md_escape(self._why_title())}", "",
                      *(f"- {_md_escape(x)}" for x in self._profiled_lines())]
            tables = [(t, rows) for t, rows in self._tables() if rows]
            for title, rows in tables:
                lines += ["", f"**{_md_escape(title)}**", "",
                          *(r.replace("against step's change", "of the untraced change")
                            for r in _md_rows(rows))]
            if tables:
                lines += ["", _md_escape(SHARE_NOTE)]
        return "".join(safe_text(line) + "\n" for line in lines) + "\n"


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
