"""Starting a run's profiler (when no other one records) and flushing a run: the session's
two entries that come from outside its calls' two halves (the first recorded call, and
``flush()`` from any thread or at exit)."""

from __future__ import annotations

from autoprof import env
from autoprof import runfolder as artifacts
from autoprof.record.session import exit as _exit
from autoprof.record.session import writer
from autoprof.record.session.driver import Driver, profiler_enabled
from autoprof.record.session.fitting import Fitting
from autoprof.record.session.owner import registry
from autoprof.record.session.table import RECORDING, Event
from autoprof.record.warn import warn_once


class Starting(Fitting):
    """Start and flush (mixed into the session)."""

    blocked_by: str | None

    def _try_start(self) -> None:
        """Start the profiler if no other one is running (called with self._lock held)."""
        with registry.lock:
            problem = self._start_unless_live()
        if problem is not None:  # outside registry.lock: ending the run takes it again
            self._warn(
                f"autoprof: could not start torch.profiler for {self.name!r} "
                f"({type(problem).__name__}: {problem}); the program goes on unprofiled"
            )
            self._fire(Event.START_FAILED, "failed", artifacts.error_record(problem, "wait"))

    def _start_unless_live(self) -> Exception | None:
        """With registry.lock: open the run and start its profiler, unless another one
        records; the exception when torch.profiler would not start."""
        self._unrecorded_noted = True  # past its warm-up: no "too few calls" note at flush
        live = registry.live
        if live is not None:
            owner = getattr(live._owner, "name", "?")
            self.blocked_by = f"{live.name!r}, whose profiler runs on thread {owner!r}"
            return None  # a sibling: label only, and start our own run once that one ends
        if profiler_enabled():
            warn_once(
                "user-profiler",
                f"autoprof: a torch.profiler is already running; {self.name!r} only adds "
                "its record_function label and starts no run of its own",
            )
            return None
        run = self._open_run()
        if run is None:
            return None
        try:
            prof = Driver(self.options, run.activities, self._on_trace_ready)
            prof.start()
        except Exception as exc:
            return exc
        self._prof = prof
        self._mark_heap(prof, run)
        self._fire(Event.START)
        return None

    def flush(self, wait: bool = True, timeout_s: float | None = None) -> None:
        """End a run still recording (status ``partial``) and wait, at most ``timeout_s``
        (default ``AUTOPROF_FINISH_TIMEOUT_S``), for its finisher to write its files."""
        with self._lock:
            self._note_flush_reason(_exit.is_exiting())
            self._fire(self._flush_event())
            if self.state in RECORDING:
                return  # its owner thread stops it at its next call: nothing to wait for yet
            finisher, run = self._finisher, self._run
        if not wait or finisher is None or run is None:
            return
        if finisher.wait(env.finish_timeout_s() if timeout_s is None else timeout_s):
            self._finisher = None
            problem = finisher.died()
            if problem is not None:
                self._finisher_failed(run, problem)
                return
            message = writer.finished_problem(self.name, run, finisher)
            if message is not None:
                self._warn(message)
        else:
            warn_once(
                "finisher-slow",
                f"autoprof: the run {run.run_dir} is still being finished by process "
                f"{finisher.proc.pid}; it finishes on its own",
            )

    def _flush_event(self) -> Event:
        """Flush: stop on the owner thread; from another thread ask the owner to stop at its
        next call, or, at exit or with the owner gone, abandon the profiler (never stop it
        here: torch crashes). Called with the lock."""
        if self.state not in RECORDING or self._prof is None or self._is_owner():
            return Event.FLUSH
        owner = self._owner
        if owner is not None and owner.is_alive() and not _exit.is_exiting():
            return Event.ASK_OWNER
        return Event.ABANDON
