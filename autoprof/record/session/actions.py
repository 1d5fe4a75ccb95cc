"""The actions of the session's table (:data:`table.TABLE`), as methods of the session:
each does one thing to the run, the profiler or the registry, and reads the event's status
and error from ``_ending``. :class:`~autoprof.record.session.core.Session` fires the events;
nothing here decides which one happens.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autoprof import runfolder as artifacts
from autoprof.record import export
from autoprof.record.options import Options
from autoprof.record.session import writer
from autoprof.record.session.driver import (
    Driver,
    torch_module,
)
from autoprof.record.session.label import step_label
from autoprof.record.session.owner import Owner, registry
from autoprof.record.session.table import Event, State
from autoprof.record.session.writer import Identity, RunState
from autoprof.record.warn import warn, warn_once


def failure(exc: BaseException | None) -> BaseException | None:
    """``exc`` unless it is a successful exit (``sys.exit()``, ``sys.exit(0)``)."""
    if isinstance(exc, SystemExit) and exc.code in (None, 0):
        return None
    return exc


class Actions:
    """What a run's events do (mixed into the session, which owns these attributes)."""

    # keys a triggered window adds to its manifests (``trigger``: autoprof.record.watch)
    manifest_extra: dict[str, Any] | None = None

    name: str
    options: Options
    run_dir: Path | None
    on_done: Callable[[], None] | None
    warmup_call_ms: list[float]
    warmup_between_ms: list[float]
    idle_sync_ms: list[float]
    call_input_bytes: int | None
    call_inputs: list[str] | None
    _who: Identity
    _lock: threading.RLock
    _local: threading.local
    _prof: Driver | None
    _owner: Owner | None
    _in_step: bool
    _stepping_thread: int | None
    _record_function: Any
    _total_steps: float
    _run: RunState | None
    _finisher: export.Finisher | None
    _handed_over: bool
    _ending: tuple[artifacts.Status, dict[str, str] | None]
    _warned: bool
    _unrecorded_noted: bool
    _sync_each_step: bool
    state: State

    def _fire(self, event: Event, status: artifacts.Status = "partial",
              error: dict[str, str] | None = None) -> None:  # pragma: no cover
        raise NotImplementedError

    def _is_owner(self) -> bool:
        """Is the calling thread the live thread that started the profiler?"""
        return self._owner is not None and self._owner.is_current()

    def _owner_native_id(self) -> int | None:
        return None if self._owner is None else self._owner.native_id

    def owner_ended(self) -> None:
        """Runs on the owner thread as it ends: the last chance to stop torch's profiler on
        the only thread that may."""
        with self._lock:
            if self._prof is not None:
                if self._run is not None and self._run.ended_by is None:
                    self._run.ended_by = "the thread that started the profiler ended"
                self._fire(Event.OWNER_ENDED)

    def detach_after_fork(self) -> None:
        """In a forked child: forget the parent's run and profiler; pass-through from now."""
        self._lock = threading.RLock()
        self._fire(Event.FORKED)

    def _open_run(self) -> RunState | None:
        """Create the run folder, its ``recording`` manifest and its finisher; None (warned,
        retired) on failure."""
        try:
            activities = writer.activities_of(self.options, torch_module().cuda.is_available())
            run = writer.open_run(self._who, self.options, activities)
            self._run, self.run_dir = run, run.run_dir
            self._sync_each_step = self.options.sync and run.uses_cuda
            writer.write_manifest(run, self._manifest("recording"))
        except Exception as exc:
            where = self.run_dir or writer.unwritable_dir(self.options, self.name)
            self._warn(
                f"autoprof: cannot write the run of {self.name!r} to {where}: "
                f"{type(exc).__name__}: {exc}; nothing was written, profiling of "
                f"{self.name!r} is off, the program goes on"
            )
            if self._run is not None:
                writer.discard_run(self._run)  # no empty folder says a run was written
            self._run, self.run_dir = None, None
            self._fire(Event.NO_RUN_FOLDER)
            return None
        try:
            self._finisher = writer.start_finisher(run)
        except Exception as exc:
            self._finisher = None
            self._warn(writer.finisher_missing(run.run_dir, exc))
        return run

    def _manifest(self, status: artifacts.Status) -> artifacts.Manifest:
        assert self._run is not None
        untraced = writer.Untraced(self.warmup_call_ms, self.warmup_between_ms, self.idle_sync_ms,
                                   self.call_input_bytes, self.call_inputs)
        built = writer.manifest(self._who, self.options, self._run, untraced, status)
        if self.manifest_extra:
            built = built.replace(extra={**built.extra, **self.manifest_extra})
        return built

    # -- the actions of the table (see table.py) ----------------------------------------

    def _take_ownership(self) -> None:
        self._record_function = step_label()
        self._owner = Owner()
        self._owner.guard(self, self._local)  # stops the run if this thread ends first

    def _go_live(self) -> None:
        registry.live = self  # called by _try_start, which holds registry.lock

    def _stop_profiler(self) -> None:
        """Stop torch's profiler, exporting what it holds (a flushed run drops a cycle
        with no recorded step)."""
        run, prof = self._run, self._prof
        self._prof = None
        self._stepping_thread = None
        status, error = self._ending
        if run is not None and error is not None and run.error is None:
            run.error = error
        if prof is not None and run is not None:
            run.skip_empty = status == "partial"
            try:  # torch syncs the device itself when the trace stops: nothing of ours here
                prof.stop()
            except Exception as exc:
                self._export_failed(exc, run.run_dir)

    def _warn_abandoned(self) -> None:
        """Flushed where the owner cannot stop the profiler: keep what was exported."""
        warn(
            f"autoprof: the profiler of {self.name!r} runs on thread "
            f"{getattr(self._owner, 'name', '?')!r}, which cannot stop it now; the run keeps "
            f"what was already exported and ends partial ({self.run_dir})"
        )
        self._prof = None
        self._stepping_thread = None

    def _warn_owner_ended(self) -> None:
        warn(
            f"autoprof: the thread that started profiling {self.name!r} ended before its "
            f"schedule did; the run ends partial ({self.run_dir}) and later calls run "
            "unprofiled"
        )

    def _release_live(self) -> None:
        with registry.lock:
            if registry.live is self:
                registry.live = None

    def _decide_status(self) -> None:
        run = self._run
        if run is not None:
            run.ended_at = artifacts.utc_now_iso()
            status = writer.requested_status(self._ending[0], run, self.options)
            self._ending = (status, self._ending[1])

    def _hand_over(self) -> None:
        """Give the run to its finisher (which decides the final status after its writes)."""
        run = self._run
        if run is None:
            return
        run.requested = self._ending[0]
        finisher = self._finisher
        content = self._manifest("recording")
        problem = finisher.hand_over(content) if finisher is not None else "not started"
        self._handed_over = problem is None
        if problem is not None:
            self._finisher_failed(run, problem)

    def _note_end(self) -> None:
        if self._run is not None:
            calls = len(self.warmup_call_ms) + self._run.steps_done
            writer.note_end(self.name, self._run, self._ending[0], self.options, calls,
                            self._handed_over)

    def _note_unrecorded(self) -> None:
        """Flushed (at exit, or by ``autoprof.flush()``) before the profiler started: say
        once what the schedule needed, for a function called at least once."""
        if self.warmup_call_ms and not self._unrecorded_noted:
            self._unrecorded_noted = True
            writer.note_unrecorded(self.name, len(self.warmup_call_ms), self.options)

    def _leave_fast_path(self) -> None:
        self._stepping_thread = None  # the owner's next call takes the full path

    def _retire(self) -> None:
        """Become a pass-through (the decorator swaps in its plain wrapper)."""
        if self.on_done is not None:
            self.on_done()

    def _detach(self) -> None:
        """In a forked child: forget the parent's run and profiler."""
        self._lock = threading.RLock()  # another parent thread may have held it at fork
        self._prof = None
        self._run = None
        self._finisher = None
        self._in_step = False
        self._stepping_thread = None
        self._owner = None

    def _on_trace_ready(self, prof: Any) -> None:
        """Called by torch.profiler at the end of each cycle: the cycle's plain trace goes
        to a hidden file the finisher compresses, and the ``recording`` manifest says how
        many recorded steps the exported traces hold (``steps_recorded``). Never raises,
        but a KeyboardInterrupt in the middle of the export fails the run (its trace is
        cut) and then goes on."""
        run = self._run
        if run is None:
            return
        recorded = run.recorded
        if run.skip_empty and recorded == run.recorded_exported:
            return  # flushed right at a cycle's start: nothing of ours in it
        run.recorded_exported = recorded
        try:
            export.export_raw_trace(prof, run.run_dir, run.dist.worker)
        except Exception as exc:
            self._export_failed(exc, run.run_dir)
            return
        except BaseException as exc:
            self._export_failed(exc, run.run_dir)
            raise
        run.cycles += 1
        try:  # the folder says what its traces hold, should this process die before the end
            writer.write_manifest(run, self._manifest("recording"))
        except Exception as exc:
            self._export_failed(exc, run.run_dir / artifacts.MANIFEST)

    def _give_up(self, event: Event, problem: Exception) -> None:
        """An event the table refuses, or an action that failed (autoprof's own bug): it
        never reaches the program, and nothing waits on it. The profiler is stopped where
        this thread may, the finisher is let go (its pipe's end tells it to finish what is
        on disk, so exit never waits out its timeout), and the session becomes a
        pass-through."""
        self._warn(f"autoprof: internal problem in {self.name!r} ({event.value}: "
                   f"{type(problem).__name__}: {problem}); its run ends as it stands "
                   f"({self.run_dir}) and the program goes on unprofiled")
        self.state, self.done = State.DONE, True
        prof, self._prof, self._stepping_thread = self._prof, None, None
        if prof is not None and self._owner is not None and self._owner.is_current():
            with contextlib.suppress(Exception):
                prof.stop()
        if registry.live is self:  # not under registry.lock: this thread may hold it
            registry.live = None
        finisher, self._finisher = self._finisher, None
        with contextlib.suppress(Exception):
            if finisher is not None:
                finisher.close()
            self._retire()

    def _finisher_failed(self, run: RunState, problem: str) -> None:
        """The finisher is gone: the folder keeps what ``python -m autoprof.finish`` needs."""
        try:
            writer.write_manifest(run, self._manifest("recording"))
        except Exception as exc:
            self._export_failed(exc, run.run_dir / artifacts.MANIFEST)
            return
        self._warn(writer.finisher_failed(run.run_dir, problem))

    def _export_failed(self, exc: BaseException, path: Path) -> None:
        run = self._run
        if run is not None and run.error is None:
            run.error = artifacts.error_record(exc, "export")
        self._warn(writer.export_failed(self.name, path, exc))

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            warn(message)

    def _other_thread(self) -> None:
        warn_once(
            f"other-thread:{id(self)}",
            f"autoprof: {self.name!r} was called from thread "
            f"{threading.current_thread().name!r} while its profiler runs on thread "
            f"{getattr(self._owner, 'name', '?')!r}; calls from other threads run "
            "unprofiled (torch.profiler follows one thread)",
        )
