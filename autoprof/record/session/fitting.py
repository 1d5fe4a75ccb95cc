"""A watched function's window fitted to ``Watch.max_trace_mb`` and ``Watch.max_host_mb`` as
it records: the heap is read as its first recorded step begins and ends, and where the rest
of the schedule would not fit the window ends after the steps that do
(:mod:`.budget_fit`)."""

from __future__ import annotations

from dataclasses import replace

from autoprof.record.session import budget_fit
from autoprof.record.session.driver import Driver
from autoprof.record.session.heap import heap_bytes
from autoprof.record.session.interrupt import Interrupts
from autoprof.record.session.writer import RunState
from autoprof.record.warn import note


class Fitting(Interrupts):
    """The window's budget, measured (mixed into the session)."""

    _total_steps: float

    def _mark_heap(self, prof: Driver, run: RunState) -> None:
        """The first recorded step begins (the profiler started, or torch stepped into it):
        read the heap, for a watched function."""
        if self.options.watch is not None and run.steps_done == prof.first_record:
            run.heap_mark = heap_bytes()

    def _fit_to_budget(self, prof: Driver, run: RunState) -> bool:
        """The first recorded step ended (with the lock): fit the window to the budget from
        its heap growth. True when the window ends with this step."""
        watch, mark = self.options.watch, run.heap_mark
        if watch is None or mark is None:
            return False
        now = heap_bytes()
        growth = None if now is None else now - mark
        fitted, keep = budget_fit.fit_first_step(self.options.schedule, watch, growth,
                                                 run.run_id)
        last = None if keep is None else prof.recording_step(run.steps_done, keep)
        if last is not None and last + 1 < self._total_steps:
            prof.cut(last)
            self._total_steps = prof.total_steps
            note(f"autoprof: {self.name!r}'s window ends after {keep} recorded step"
                 f"{'' if keep == 1 else 's'}: {fitted.why}")
        elif keep is not None:
            fitted = replace(fitted, why=None, active=self.options.schedule.active,
                             repeat=self.options.schedule.repeat)
        if self.manifest_extra is None or fitted.why is not None:
            self.manifest_extra = {**(self.manifest_extra or {}), "budget": fitted.to_json()}
        return last is not None and last == run.steps_done
