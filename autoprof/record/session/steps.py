"""The end of each kind of call while a run records: a warm-up call (timed, untraced), a
step before the profiler's first record (timed like one), a profiler step (counted, torch
stepped, the run ended when the schedule is over or the step failed)."""

from __future__ import annotations

import time
from typing import Any

from autoprof import runfolder as artifacts
from autoprof.record.session import terminate
from autoprof.record.session.driver import (
    Driver,
    idle_sync_ms,
    note_slow_start,
    sync_if_cuda_in_use,
    torch_module,
)
from autoprof.record.session.interrupt import describe
from autoprof.record.session.starting import Starting
from autoprof.record.session.table import RECORDING, Event, State
from autoprof.record.session.writer import RunState


class Steps(Starting):
    """The ends of the calls of a recording run (mixed into the session)."""

    _warmup_begun: int

    def _end_warmup(self, started_ns: int, exc: BaseException | None) -> None:
        sync_if_cuda_in_use()
        elapsed_ms = (time.perf_counter_ns() - started_ns) / 1e6
        sync_ms = idle_sync_ms()
        with self._lock:
            self.warmup_call_ms.append(elapsed_ms)
            if sync_ms is not None:
                self.idle_sync_ms.append(sync_ms)
            if exc is not None and self.state is State.WARMUP_CALLS:
                run = self._open_run()
                if run is not None:
                    run.ended_by = (f"{describe(exc)} raised by the function in warm-up call "
                                    f"{len(self.warmup_call_ms)}, before any recorded step")
                    self._fire(Event.WARMUP_FAILED, "failed",
                               artifacts.error_record(exc, "warmup"))

    def _note_between(self, now_ns: int) -> None:
        """A warm-up call begins (with the lock): the time since this thread's last one ended,
        when one did, is time between two untraced calls."""
        ended_ns = getattr(self._local, "warmup_ended_ns", None)
        if ended_ns is not None:
            self.warmup_between_ms.append((now_ns - ended_ns) / 1e6)
            self._local.warmup_ended_ns = None

    def _before_recording(self) -> bool:
        """Is the next step one before the profiler first records (the schedule's
        ``skip_first`` and first ``wait`` steps)? Such calls are timed like warm-up calls:
        torch.profiler records nothing then, so the device sync cannot disturb the trace."""
        run, prof = self._run, self._prof
        return run is not None and prof is not None and run.steps_done < prof.first_recorded_step

    def _end_wait_step(self, rf: Any, started_ns: int, exc: BaseException | None) -> None:
        sync_if_cuda_in_use()
        elapsed_ms = (time.perf_counter_ns() - started_ns) / 1e6
        with self._lock:
            if self._run is not None:
                self._run.wait_call_ms.append(elapsed_ms)
        self._end_step(rf, exc)

    def _end_step(self, rf: Any, exc: BaseException | None) -> None:
        try:
            if exc is None and self._sync_each_step:  # asked for (sync=True): labelled ours
                with self._record_function("autoprof::sync"):
                    torch_module().cuda.synchronize()
        finally:
            self._in_step = False
            rf.__exit__(None, None, None)
        with self._lock:
            prof, run = self._prof, self._run
            if prof is not None and run is not None and self.state in RECORDING:
                self._count_step(prof, run, exc)  # else flushed meanwhile
        if terminate.pending:  # a SIGTERM waited for this step to end
            self._sigterm_at_safe_point()

    def _step_torch(self, prof: Driver, run: RunState) -> bool:
        """torch's ``step()`` (False: it failed, the run ended); a Ctrl+C in it fails the
        run, then reaches the program."""
        try:
            prof.step()
        except Exception as problem:
            self._export_failed(problem, run.run_dir)
            self._fire(Event.STEP_FAILED, "failed")
            return False
        except BaseException as interrupt:  # Ctrl+C while torch stops or exports a cycle
            self._interrupted(interrupt, run)
            raise
        if self.options.watch is not None:  # (a recorded step's own cost: no call unwatched)
            self._mark_heap(prof, run)
        return True

    def _count_step(self, prof: Driver, run: RunState, exc: BaseException | None) -> None:
        """One step of the schedule ended (with the lock): count it, step torch, and end
        the run when the schedule is over or the step failed."""
        phase = prof.phase(run.steps_done)
        if exc is not None:
            self._step_raised(prof, run, exc)
            return
        # No device sync of our own here: it would sit inside this ProfilerStep. torch
        # synchronizes the device itself when a cycle's trace stops (outside any step).
        ends_now = False
        if phase in ("active", "last_active"):
            ends_now = run.recorded == 0 and self._fit_to_budget(prof, run)
            run.recorded += 1
        run.steps_done += 1
        if not ends_now and not self._step_torch(prof, run):
            return
        if run.profiler_start_ms is None and prof.started:
            run.profiler_start_ms = prof.start_ms
            note_slow_start(self.name, prof.start_ms)
        if run.steps_done >= self._total_steps:
            self._fire(Event.SCHEDULE_OVER, "complete")
        elif run.steps_done >= prof.first_recorded_step:
            owner = self._owner
            self._stepping_thread = None if owner is None else owner.native_id
