"""A window that ends before its schedule, and why (the manifest's ``ended_by``).

- The program's exception, ``KeyboardInterrupt`` or ``sys.exit(code)`` inside a step, after
  at least one recorded step: the run ends ``partial`` with the steps recorded before it (the
  exception then reaches the program unchanged). With no recorded step yet there is nothing
  to read: the run fails with the error, as before.
- SIGTERM while the window records on the main thread (:mod:`.terminate`): ``partial``,
  then SIGTERM's previous meaning.
- A flush, the program's exit (an exception outside the function included), the owner
  thread's end: ``partial``, the reason said.
- ``KeyboardInterrupt`` while torch stops or exports a cycle: the cycle's trace may be cut,
  so the run fails (never a ``partial`` counting steps no trace holds).
"""

from __future__ import annotations

import sys

from autoprof import runfolder as artifacts
from autoprof.record.session import terminate
from autoprof.record.session.after_window import AfterWindow
from autoprof.record.session.driver import Driver
from autoprof.record.session.table import RECORDING, Event
from autoprof.record.session.writer import RunState

SIGTERM_LOCK_S = 1.0  # the handler waits at most this for the session's lock, then defers


def describe(exc: BaseException) -> str:
    message = artifacts.error_record(exc, "active")["message"]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _where(prof: Driver, run: RunState) -> str:
    recorded = run.recorded
    return (f"in profiler step {run.steps_done + 1} ({prof.phase(run.steps_done)}), after "
            f"{recorded} recorded step{'' if recorded == 1 else 's'}")


def exit_reason() -> str:
    """Why a run still recording ends at the interpreter's exit: the program's uncaught
    exception when there is one (raised outside the function, between two calls)."""
    exc = getattr(sys, "last_value", None)
    if isinstance(exc, BaseException):
        return (f"the program ended during the window: {describe(exc)} raised outside "
                "the function")
    return "the program exited during the window"


class Interrupts(AfterWindow):
    """Why a window ended early (mixed into the session)."""

    _sigterm_guarded = False

    def _step_raised(self, prof: Driver, run: RunState, exc: BaseException) -> None:
        """The program's function raised in a step (with the lock): ``partial`` with the
        steps recorded before it, or failed when none was."""
        phase = prof.phase(run.steps_done)
        run.ended_by = f"{describe(exc)} raised by the function {_where(prof, run)}"
        run.interrupted = True
        if run.recorded >= 1:
            self._fire(Event.INTERRUPTED, "partial")
        else:
            self._fire(Event.STEP_FAILED, "failed", artifacts.error_record(exc, phase))

    def _interrupted(self, interrupt: BaseException, run: RunState) -> None:
        """A KeyboardInterrupt (or SystemExit) out of torch's ``step()``: the cycle it was
        stopping or exporting may hold nothing on disk, so the run fails with it (never a
        ``partial`` counting steps no trace holds); the interrupt then reaches the user."""
        if run.error is None:
            run.error = artifacts.error_record(interrupt, "export")
        run.ended_by = f"{describe(interrupt)} while torch exported a cycle"
        self._fire(Event.STEP_FAILED, "failed")

    def _note_flush_reason(self, exiting: bool) -> None:
        """A flush ends a window still recording (with the lock): say why."""
        run = self._run
        if run is not None and run.ended_by is None and self.state in RECORDING:
            run.ended_by = exit_reason() if exiting else (
                "flushed before the schedule ended")

    # -- SIGTERM ------------------------------------------------------------------------

    def _guard_sigterm(self) -> None:
        """The profiler started (on its owner thread): SIGTERM ends this window first."""
        self._sigterm_guarded = terminate.install(self._on_sigterm)

    def _unguard_sigterm(self) -> None:
        if self._sigterm_guarded:
            self._sigterm_guarded = False
            terminate.uninstall()

    def _on_sigterm(self, safe: bool) -> bool:
        """SIGTERM, in the main thread's handler: end the window now where the main thread
        owns the profiler and is in the program's code (``safe``), else at the end of the
        step in progress (False)."""
        if self.state not in RECORDING or self._prof is None:
            return True
        if not safe or not self._is_owner():
            return False
        if not self._lock.acquire(timeout=SIGTERM_LOCK_S):
            return False
        try:
            self._end_by_sigterm()
        finally:
            self._lock.release()
        return True

    def _end_by_sigterm(self) -> None:
        prof, run = self._prof, self._run
        if self.state not in RECORDING or prof is None or run is None:
            return
        where = _where(prof, run) if self._in_step else (
            f"between two steps, after {run.recorded} recorded step"
            f"{'' if run.recorded == 1 else 's'}")
        run.ended_by, run.interrupted = f"SIGTERM {where}", True
        self._fire(Event.INTERRUPTED, "partial")

    def _sigterm_at_safe_point(self) -> None:
        """A SIGTERM waited for the step in progress to end (the owner thread, between two
        steps): end the window, then SIGTERM's previous meaning."""
        with self._lock:
            self._end_by_sigterm()
        terminate.deliver()
