"""One profiling session per decorated function or region name: the state machine.

``warmup`` (untraced, timed calls) -> ``profiling`` (torch.profiler, one step per call) ->
``done`` (pass-through). An error in the user's function, an export failure or a flush also
end the session. Only one torch profiler runs at a time in a process: a session that finds
another one recording only adds its ``record_function`` label.

Every change of state goes through ``_TRANSITIONS`` (as torch.profiler's own ``action_map``
does); the phase of a step is asked of the schedule function handed to torch, never
recomputed.

Threads: the profiler is driven (start, step, stop) only by the thread that started it, the
owner (its native id, and the thread must be alive: torch crashes when another thread steps
or stops it, and Python reuses ``threading.get_ident()`` values). Calls from other threads
during the profiled window run unrecorded, are not steps, and warn once. When the owner
thread ends before the schedule does, the run is stopped on that thread as it ends (status
``partial``); later calls are pass-throughs. A flush from another thread asks the owner to
stop at its next call; at interpreter exit a profiler whose owner is still running (a daemon
thread) is abandoned: its run ends ``partial`` with what was already exported.

Fork: a child never touches its parent's runs (an at-fork handler makes every session a
pass-through in the child). Kineto's exit handlers hang a child made by ``os.fork()`` once a
torch profiler ever ran in the parent, unless the child ends with ``os._exit()`` (as
``multiprocessing`` children do): see docs/reliability.md.
"""

from __future__ import annotations

import atexit
import enum
import json
import math
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autoprof import env
from autoprof import runfolder as artifacts
from autoprof.record import export
from autoprof.record import warn as _warn_state
from autoprof.record.distributed import DistInfo, dist_info, shared_run_id
from autoprof.record.options import Options, Phase
from autoprof.record.warn import note, warn, warn_once


class State(enum.Enum):
    WARMUP = "warmup"  # untraced, timed calls (``warmup_calls``)
    PROFILING = "profiling"  # torch.profiler runs on the owner thread, one step per call
    DONE = "done"  # pass-through: the run ended, failed, was never started, or is covered


# (from, to) -> why; any other change is a bug and raises (caught by the call's guard)
_TRANSITIONS: dict[tuple[State, State], str] = {
    (State.WARMUP, State.PROFILING): "the profiler started on this thread",
    (State.WARMUP, State.DONE): "a warm-up call failed, no run folder, or covered by a run",
    (State.PROFILING, State.DONE): "schedule over, a step failed, flushed, or owner ended",
    (State.DONE, State.DONE): "retired again (covered after a run, a flush after the end)",
}
# torch.profiler.ProfilerAction name -> the phase autoprof records in an error
_PHASES: dict[str, Phase] = {
    "NONE": "wait",
    "WARMUP": "profiler_warmup",
    "RECORD": "active",
    "RECORD_AND_SAVE": "last_active",
}
Token = tuple[int, Any]
_PASS, _LABEL, _WARMUP, _STEP, _WAIT_STEP = 0, 1, 2, 3, 4
_PASS_TOKEN: Token = (_PASS, None)

_live_lock = threading.Lock()
_live: Session | None = None  # the session whose torch profiler is running
_sessions: weakref.WeakSet[Session] = weakref.WeakSet()
_atexit_registered = False
_exiting = False  # the interpreter is exiting: no owner thread can be asked to stop any more
_torch: Any = None
SLOW_START_S = 0.5  # a profiler start at least this long is noted (logging)


def torch_module() -> Any:
    """torch, imported on first use (``import autoprof`` never imports it)."""
    global _torch
    if _torch is None:
        import torch

        _torch = torch
    return _torch


def profiler_enabled() -> bool:
    return bool(torch_module().autograd._profiler_enabled())


def _sync_if_cuda_in_use() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _error(exc: BaseException, phase: Phase | str) -> dict[str, str]:
    return artifacts.error_record(exc, phase)


def _failure(exc: BaseException | None) -> BaseException | None:
    """``exc`` unless it is a successful exit (``sys.exit()``, ``sys.exit(0)``)."""
    if isinstance(exc, SystemExit) and exc.code in (None, 0):
        return None
    return exc


@dataclass
class RunState:
    """What one run has produced so far (guarded by its session's lock)."""

    run_dir: Path
    run_id: str
    dist: DistInfo
    uses_cuda: bool
    started_at: str = field(default_factory=artifacts.utc_now_iso)
    ended_at: str | None = None
    steps_done: int = 0
    cycles: int = 0
    recorded_exported: int = 0  # recorded steps already in an exported trace
    skip_empty: bool = False  # stopping on flush: a cycle with no recorded step is dropped
    traces: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    tables_error: str | None = None
    error: dict[str, str] | None = None
    wait_call_ms: list[float] = field(default_factory=list)  # steps before the first record
    recorded: int = 0  # steps torch's schedule recorded (RECORD, RECORD_AND_SAVE)
    requested: artifacts.Status | None = None  # the status handed to the finisher


class Session:
    """The profiling state of one decorated function or one region name."""

    def __init__(
        self,
        name: str,
        options: Options,
        qualname: str,
        source_file: str | None,
        source_line: int | None,
    ) -> None:
        self.name = name
        self.options = options
        self.qualname = qualname
        self.source_file = source_file
        self.source_line = source_line
        self.state = State.WARMUP
        self.done = False  # read without the lock on the fast paths
        self.covered = False  # retired inside another session's step: label-only from then on
        self.run_dir: Path | None = None
        self.on_done: Callable[[], None] | None = None
        self.warmup_call_ms: list[float] = []
        self._warmup_begun = 0
        self._lock = threading.RLock()
        self._local = threading.local()
        self._prof: Any = None
        self._owner: int | None = None  # native id of the thread that started the profiler
        self._owner_thread: threading.Thread | None = None
        self._stop_requested = False  # flushed from another thread: the owner stops next call
        self._in_step = False  # the owner thread is inside one of our steps
        # the owner's native id while the next call is a plain recorded step (the fast path)
        self._stepping_thread: int | None = None
        self._schedule_fn: Callable[[int], Any] | None = None  # the one handed to torch
        self._record_function: Any = None
        self._first_recorded_step = 0  # asked of torch's schedule function at start
        total = options.schedule.total_steps
        self._total_steps: float = math.inf if total is None else total
        self._sync_each_step = False  # options.sync on a run that records CUDA
        self._run: RunState | None = None
        self._activities: tuple[str, ...] = ("cpu",)
        self._finisher: export.Finisher | None = None
        self.label = artifacts.kineto_label(name)  # what Kineto writes into the trace
        self._warned = False
        _sessions.add(self)
        _register_atexit()

    def __repr__(self) -> str:
        return (f"<autoprof Session {self.name!r} state={self.state.value} "
                f"run_dir={self.run_dir}>")

    def _enter(self, state: State) -> None:
        if (self.state, state) not in _TRANSITIONS:
            raise RuntimeError(f"autoprof: no transition {self.state.value} -> {state.value}")
        self.state = state
        self.done = state is State.DONE

    def _is_owner(self) -> bool:
        """Is the calling thread the live thread that started the profiler?"""
        owner = self._owner_thread
        if owner is None or self._owner != threading.get_native_id():
            return False
        # the same thread object, or a live one: a native id is reused only after its thread
        # ended (at exit the main thread already counts as stopped, yet it is still the owner)
        return owner is threading.current_thread() or owner.is_alive()

    def _phase(self, step: int) -> Phase:
        fn = self._schedule_fn
        if fn is None or step >= self._total_steps:
            return "done"
        return _PHASES.get(fn(step).name, "wait")

    # -- the two halves of one call (or one region entry) -------------------------------

    def _recorded_step(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """The steady state of a run: one recorded step on the owner thread, with nothing
        to time and nothing to decide (benchmarked: recording steps/s, target 2). A nested
        call of the same function sees ``_in_step`` and only adds its label."""
        self._stepping_thread = None  # until this step ends: nested calls take the full path
        try:
            rf = self._record_function(self.label)
            rf.__enter__()
        except Exception:  # pragma: no cover - defensive: the full path warns and goes on
            return self._finish_call(fn, args, kwargs, self.begin())
        self._in_step = True
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            self._end_recorded_step(rf, exc)
            raise
        self._end_recorded_step(rf, None)
        return result

    def _end_recorded_step(self, rf: Any, exc: BaseException | None) -> None:
        try:
            self._end_step(rf, _failure(exc))
        except Exception as problem:  # pragma: no cover - defensive
            self._warn(f"autoprof: internal problem in {self.name!r}: {problem!r}")

    def _finish_call(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
        token: Token,
    ) -> Any:
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            self.end(token, exc)
            raise
        self.end(token, None)
        return result

    def begin(self) -> Token:
        """Never raises: on an internal problem the call runs unprofiled (one warning)."""
        local = self._local
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        try:
            return self._begin(depth)
        except Exception as problem:  # pragma: no cover - defensive
            self._warn(f"autoprof: internal problem in {self.name!r}: {problem!r}")
            return _PASS_TOKEN

    def _begin(self, depth: int) -> Token:
        if self._in_step and self._owner == threading.get_native_id():
            return self._label()  # nested in our own step (the fast path keeps no depth)
        if depth == 0 and not self.done:
            live = _live
            if live is not None and live is not self and live._in_step:
                if live._owner == threading.get_native_id():
                    with self._lock:
                        self._retire(covered=True)  # nested in another session's step
                    return self._label()
            with self._lock:
                if self.state is State.WARMUP and self._warmup_begun < self.options.warmup_calls:
                    self._warmup_begun += 1
                    _sync_if_cuda_in_use()
                    return (_WARMUP, time.perf_counter_ns())
                if self.state is State.WARMUP and len(self.warmup_call_ms) >= self._warmup_begun:
                    self._try_start()  # not while another thread's warm-up call still runs
                if self.state is State.PROFILING and self._prof is not None:
                    if not self._is_owner():
                        self._other_thread()
                        return self._label()
                    if self._stop_requested:
                        self._finish("partial")
                        return self._label()
                    timed = self._before_recording()
                    if timed:
                        _sync_if_cuda_in_use()
                    rf = self._record_function(self.label)
                    rf.__enter__()
                    self._in_step = True
                    if timed:
                        return (_WAIT_STEP, (rf, time.perf_counter_ns()))
                    return (_STEP, rf)
        return self._label()

    def end(self, token: Token, exc: BaseException | None) -> None:
        """Never raises: profiling must not break the user's program."""
        kind, payload = token
        exc = _failure(exc)
        try:
            if kind == _STEP:
                self._end_step(payload, exc)
            elif kind == _LABEL:
                payload.__exit__(None, None, None)
            elif kind == _WARMUP:
                self._end_warmup(payload, exc)
            elif kind == _WAIT_STEP:
                rf, started_ns = payload
                self._end_wait_step(rf, started_ns, exc)
        except Exception as problem:  # pragma: no cover - defensive
            self._warn(f"autoprof: internal problem in {self.name!r}: {problem!r}")
        finally:
            self._local.depth -= 1

    def _label(self) -> Token:
        if not profiler_enabled():
            return _PASS_TOKEN
        rf = torch_module().autograd.profiler.record_function(self.label)
        rf.__enter__()
        return (_LABEL, rf)

    def _end_warmup(self, started_ns: int, exc: BaseException | None) -> None:
        _sync_if_cuda_in_use()
        elapsed_ms = (time.perf_counter_ns() - started_ns) / 1e6
        with self._lock:
            self.warmup_call_ms.append(elapsed_ms)
            if exc is not None and self.state is State.WARMUP:
                if self._open_run() is not None:
                    self._finish("failed", _error(exc, "warmup"))

    def _before_recording(self) -> bool:
        """Is the next step one before the profiler first records (the schedule's
        ``skip_first`` and first ``wait`` steps)? Such calls are timed like warm-up calls:
        torch.profiler records nothing then, so the device sync cannot disturb the trace."""
        run = self._run
        return run is not None and run.steps_done < self._first_recorded_step

    def _end_wait_step(self, rf: Any, started_ns: int, exc: BaseException | None) -> None:
        _sync_if_cuda_in_use()
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
            if prof is None or run is None or self.state is not State.PROFILING:
                return  # flushed meanwhile
            phase = self._phase(run.steps_done)
            if exc is not None:
                self._finish("failed", _error(exc, phase))
                return
            # No device sync of our own here: it would sit inside this ProfilerStep. torch
            # synchronizes the device itself when a cycle's trace stops (outside any step).
            if phase in ("active", "last_active"):
                run.recorded += 1
            run.steps_done += 1
            try:
                prof.step()
            except Exception as problem:
                self._export_failed(problem, run.run_dir)
                self._finish("failed")
                return
            if run.steps_done >= self._total_steps:
                self._finish("complete")
            elif run.steps_done >= self._first_recorded_step:
                self._stepping_thread = self._owner

    # -- starting ----------------------------------------------------------------------

    def _try_start(self) -> None:
        """Start the profiler if no other one is running (called with self._lock held)."""
        global _live
        torch = torch_module()
        with _live_lock:
            live = _live
            if live is not None:
                return  # a sibling: label only, and start our own run once that one ends
            if torch.autograd._profiler_enabled():
                warn_once(
                    "user-profiler",
                    f"autoprof: a torch.profiler is already running; {self.name!r} only adds "
                    "its record_function label and starts no run of its own",
                )
                return
            run = self._open_run()
            if run is None:
                return
            try:
                prof = self._make_profiler(run)
                started_ns = time.perf_counter_ns()
                prof.start()
                _note_slow_start(self.name, (time.perf_counter_ns() - started_ns) / 1e9)
            except Exception as exc:
                self._warn(
                    f"autoprof: could not start torch.profiler for {self.name!r} "
                    f"({type(exc).__name__}: {exc}); the program goes on unprofiled"
                )
                self._finish("failed", _error(exc, "wait"))
                return
            self._prof = prof
            self._record_function = torch.autograd.profiler.record_function
            self._owner = threading.get_native_id()
            self._owner_thread = threading.current_thread()
            self._local.guard = _OwnerGuard(self)  # stops the run if this thread ends first
            self._enter(State.PROFILING)
            _live = self

    def _open_run(self) -> RunState | None:
        """Create the run folder and its ``recording`` manifest; None (warned) on failure."""
        torch = torch_module()
        info = dist_info()
        out_dir = Path(os.path.abspath(self.options.resolved_out_dir()))  # chdir-proof
        run_id, problem = shared_run_id(self.name, artifacts.new_run_id(), info)
        if problem:
            warn_once("dist-run-id", f"autoprof: {problem}; each rank writes its own run folder")
        shared = info.initialized and problem is None
        try:
            for _ in range(5):
                try:
                    run_dir = artifacts.create_run_dir(out_dir, self.name, run_id, exist_ok=shared)
                    break
                except FileExistsError:
                    run_id = artifacts.new_run_id()
            else:
                raise FileExistsError(f"no free run id under {out_dir / self.name}")
            activities: tuple[str, ...] = self.options.activities or (
                ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)
            )
            self._run = RunState(run_dir, run_id, info, uses_cuda="cuda" in activities)
            self._sync_each_step = self.options.sync and self._run.uses_cuda
            self._activities = activities
            self.run_dir = run_dir
            self._write_manifest("recording")
            self._start_finisher(self._run)
            return self._run
        except Exception as exc:
            where = self.run_dir or out_dir / artifacts.safe_component(self.name)
            self._warn(
                f"autoprof: cannot write the run of {self.name!r} to {where}: "
                f"{type(exc).__name__}: {exc}; profiling of {self.name!r} is off, "
                "the program goes on"
            )
            self._run = None
            self._retire()
            return None

    def _make_profiler(self, run: RunState) -> Any:
        from torch.profiler import ProfilerActivity, profile, schedule

        kinds = {"cpu": ProfilerActivity.CPU, "cuda": ProfilerActivity.CUDA}
        s = self.options.schedule
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*won't be using warmup.*")
            extra = {"skip_first_wait": s.skip_first_wait} if s.skip_first_wait else {}
            sched = schedule(
                wait=s.wait,
                warmup=s.warmup,
                active=s.active,
                repeat=s.repeat,
                skip_first=s.skip_first,
                **extra,
            )
        self._schedule_fn = sched
        first = 0  # the first step torch's schedule does anything in (later ones are recorded)
        while first < self._total_steps and sched(first).name == "NONE":
            first += 1
        self._first_recorded_step = first
        # autoprof exports each cycle through on_trace_ready, so torch's "Profiler clears
        # events at the end of each cycle" notice (torch >= 2.5) is expected: silence that
        # one message, nothing else.
        warnings.filterwarnings(
            "ignore", message="Warning: Profiler clears events at the end of each cycle"
        )
        o = self.options
        return profile(
            activities=[kinds[a] for a in self._activities],
            schedule=sched,
            on_trace_ready=self._on_trace_ready,
            record_shapes=o.record_shapes,
            profile_memory=o.profile_memory,
            with_stack=o.with_stack,
            with_flops=o.with_flops,
            with_modules=o.with_modules,
        )

    # -- exporting ---------------------------------------------------------------------

    def _on_trace_ready(self, prof: Any) -> None:
        """Called by torch.profiler at the end of each cycle: the cycle's plain trace goes
        to a hidden file the finisher compresses. Never raises, but a KeyboardInterrupt in
        the middle of the export fails the run (its trace is cut) and then goes on."""
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

    def _start_finisher(self, run: RunState) -> None:
        try:
            self._finisher = export.Finisher.start(
                run.run_dir, run.dist.rank if run.dist.initialized else None)
        except Exception as exc:
            self._finisher = None
            self._warn(
                f"autoprof: cannot start the finisher of {run.run_dir} ({type(exc).__name__}: "
                f"{exc}); the run will stay 'recording' until you run "
                f"`python -m autoprof.finish {run.run_dir}`"
            )

    def _hand_over(self, run: RunState, status: artifacts.Status) -> bool:
        """Give the run to its finisher (which decides the final status after its writes);
        False when no finisher took it."""
        manifest = self._manifest("recording")
        manifest["requested_status"] = status
        run.requested = status
        finisher = self._finisher
        problem = finisher.hand_over(manifest) if finisher is not None else "not started"
        if problem is not None:
            self._finisher_failed(run, problem)
        return problem is None

    def _finisher_failed(self, run: RunState, problem: str) -> None:
        """The finisher is gone: the folder keeps what ``python -m autoprof.finish`` needs."""
        try:
            self._write_manifest("recording", requested=run.requested)
        except Exception as exc:
            self._export_failed(exc, run.run_dir / artifacts.MANIFEST)
            return
        self._warn(
            f"autoprof: the finisher of {run.run_dir} failed ({problem}); the run stays "
            f"'recording' until you run `python -m autoprof.finish {run.run_dir}` "
            "where autoprof can be imported"
        )

    def _report_finished(self, run: RunState, finisher: export.Finisher) -> None:
        """After the finisher: one warning if the run failed or has no tables."""
        name = (artifacts.rank_manifest(run.dist.rank) if run.dist.initialized
                else artifacts.MANIFEST)
        try:
            manifest = json.loads((run.run_dir / name).read_bytes())
        except (OSError, ValueError) as exc:
            why = finisher.died() or f"{type(exc).__name__}: {exc}"
            self._warn(f"autoprof: could not write the profile of {self.name!r} to "
                       f"{run.run_dir}: the finisher could not finish it ({why})")
            return
        error = manifest.get("error") or {}
        if manifest.get("status") == "failed" and error.get("phase") == "export":
            self._warn(f"autoprof: could not write the profile of {self.name!r} to "
                       f"{run.run_dir}: {error.get('type')}: {error.get('message')}")
        elif manifest.get("tables_error"):
            self._warn(f"autoprof: {run.run_dir}: table.txt and ops.csv not written: "
                       f"{manifest['tables_error']}")

    def _export_failed(self, exc: BaseException, path: Path) -> None:
        run = self._run
        if run is not None and run.error is None:
            run.error = _error(exc, "export")
        self._warn(
            f"autoprof: could not write the profile of {self.name!r} to {path}: "
            f"{type(exc).__name__}: {exc}; the program goes on"
        )

    def _manifest(self, status: artifacts.Status) -> dict[str, Any]:
        run = self._run
        assert run is not None
        dist = run.dist
        identity = {
            "name": self.name,
            "qualname": self.qualname,
            "source_file": self.source_file,
            "source_line": self.source_line,
            "run_id": run.run_id,
            **artifacts.host_identity(),
            "rank": dist.rank,
            "world_size": dist.world_size,
            "device": artifacts.device_info(run.uses_cuda),
        }
        return artifacts.build_manifest(
            status=status,
            identity=identity,
            options=self.options.as_manifest(),
            started_at=run.started_at,
            ended_at=run.ended_at,
            warmup_call_ms=self.warmup_call_ms,
            wait_call_ms=run.wait_call_ms,
            steps_recorded=run.recorded,
            files=(),
            error=run.error,
            extra={"tables_error": None},
        )

    def _write_manifest(self, status: artifacts.Status,
                        requested: artifacts.Status | None = None) -> None:
        run = self._run
        if run is None:
            return
        manifest = self._manifest(status)
        if requested is not None:
            manifest["requested_status"] = requested
        dist = run.dist
        if dist.initialized:
            artifacts.atomic_write_json(
                run.run_dir / artifacts.rank_manifest(dist.rank), manifest)
            if dist.rank != 0:
                return
            manifest["ranks"] = list(range(dist.world_size))
        artifacts.atomic_write_json(run.run_dir / artifacts.MANIFEST, manifest)

    # -- ending ------------------------------------------------------------------------

    def _finish(
        self, status: artifacts.Status, error: dict[str, str] | None = None, stop: bool = True
    ) -> None:
        """Stop the profiler (exporting what it holds), then finalize in the background.
        ``stop=False`` abandons a profiler this thread may not stop. Called with the lock."""
        global _live
        run, prof = self._run, self._prof
        self._prof = None
        self._stepping_thread = None
        if run is not None and error is not None and run.error is None:
            run.error = error
        if prof is not None and run is not None and stop:
            run.skip_empty = status == "partial"
            try:  # torch syncs the device itself when the trace stops: nothing of ours here
                prof.stop()
            except Exception as exc:
                self._export_failed(exc, run.run_dir)
        with _live_lock:
            if _live is self:
                _live = None
        if run is not None:
            run.ended_at = artifacts.utc_now_iso()
            if run.error is not None:
                status = "failed"
            elif status == "partial" and self.options.schedule.repeat == 0 and run.cycles:
                status = "complete"  # repeat=0 runs until stopped: each saved cycle is whole
            handed_over = self._hand_over(run, status)
            _note_end(self.name, run, status, self._total_steps, handed_over)
        self._retire()

    def _retire(self, covered: bool = False) -> None:
        """Become a pass-through; ``covered``: called inside another session's step, so that
        run's trace holds our calls and from now on we only add our label."""
        self.covered = self.covered or covered
        self._enter(State.DONE)
        if self.on_done is not None:
            self.on_done()

    def flush(self, wait: bool = True, timeout_s: float | None = None) -> None:
        """End a run still recording (status ``partial``) and wait, at most ``timeout_s``
        (default ``AUTOPROF_FINISH_TIMEOUT_S``), for its finisher to write its files."""
        with self._lock:
            if self.state is State.PROFILING:
                self._stop_or_ask_owner()
            if self.state is State.PROFILING:
                return  # its owner thread stops it at its next call: nothing to wait for yet
            finisher, run = self._finisher, self._run
        if not wait or finisher is None or run is None:
            return
        if finisher.wait(env.finish_timeout_s() if timeout_s is None else timeout_s):
            self._finisher = None
            problem = finisher.died()
            if problem is not None:
                self._finisher_failed(run, problem)
            else:
                self._report_finished(run, finisher)
        else:
            warn_once(
                "finisher-slow",
                f"autoprof: the run {run.run_dir} is still being finished by process "
                f"{finisher.proc.pid}; it finishes on its own",
            )

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            warn(message)

    # -- threads and fork --------------------------------------------------------------

    def _stop_or_ask_owner(self) -> None:
        """Flush: stop on the owner thread; from another thread ask the owner to stop at its
        next call, or, at exit or with the owner gone, abandon the profiler (never stop it
        here: torch crashes). Called with the lock."""
        if self._prof is None or self._is_owner():
            self._finish("partial")
            return
        owner = self._owner_thread
        if owner is not None and owner.is_alive() and not _is_exiting():
            self._stop_requested = True
            self._stepping_thread = None  # the owner's next call takes the full path
            return
        warn(
            f"autoprof: the profiler of {self.name!r} runs on thread "
            f"{getattr(owner, 'name', '?')!r}, which cannot stop it now; the run keeps what "
            f"was already exported and ends partial ({self.run_dir})"
        )
        self._finish("partial", stop=False)

    def _owner_ended(self) -> None:
        """Runs on the owner thread as it ends: the last chance to stop torch's profiler on
        the only thread that may."""
        with self._lock:
            if self.state is not State.PROFILING or self._prof is None:
                return
            warn(
                f"autoprof: the thread that started profiling {self.name!r} ended before its "
                f"schedule did; the run ends partial ({self.run_dir}) and later calls run "
                "unprofiled"
            )
            self._finish("partial")

    def _other_thread(self) -> None:
        warn_once(
            f"other-thread:{id(self)}",
            f"autoprof: {self.name!r} was called from thread "
            f"{threading.current_thread().name!r} while its profiler runs on thread "
            f"{getattr(self._owner_thread, 'name', '?')!r}; calls from other threads run "
            "unprofiled (torch.profiler follows one thread)",
        )

    def _detach_after_fork(self) -> None:
        """In a forked child: forget the parent's run and profiler; pass-through from now."""
        self._lock = threading.RLock()  # another parent thread may have held it at fork
        self._prof = None
        self._run = None
        self._finisher = None
        self._in_step = False
        self._stepping_thread = None
        self._owner = self._owner_thread = None
        self._enter(State.DONE)
        if self.on_done is not None:
            self.on_done()


class _OwnerGuard:
    """Lives in the owner thread's ``threading.local``; Python frees it on that thread as
    the thread ends, which stops a run the thread left recording."""

    __slots__ = ("_session",)

    def __init__(self, session: Session) -> None:
        self._session = weakref.ref(session)

    def __del__(self) -> None:
        session = self._session()
        if session is not None:
            try:
                session._owner_ended()
            except Exception:  # pragma: no cover - nothing may escape a dying thread
                pass


def _is_exiting() -> bool:
    return _exiting


def _note_slow_start(name: str, seconds: float) -> None:
    if seconds >= SLOW_START_S:
        note(f"autoprof: torch.profiler took {seconds:.1f} s to start for {name!r} "
             "(the first profiled call waited for it; later calls do not)")


def _note_end(name: str, run: RunState, status: str, total_steps: float,
              handed_over: bool) -> None:
    """What is known when the profiler stops: the calls recorded, not the final status (the
    finisher decides it, and warns when the run fails)."""
    done = f"{run.steps_done} profiled call{'' if run.steps_done == 1 else 's'}"
    if status == "failed":
        what = f"failed after {done}"
    elif status == "partial" and total_steps != math.inf:
        what = (f"recorded partially ({run.steps_done} of {int(total_steps)} profiled calls: "
                "the program called it fewer times than the schedule needs)")
    elif status == "partial":
        what = f"recorded partially ({done})"
    else:
        what = f"recorded ({done})"
    then = ("finishing in the background" if handed_over else
            "left 'recording' for `python -m autoprof.finish`")
    note(f"autoprof: run of {name!r} {what}; {then}: {run.run_dir}")


def _after_fork_in_child() -> None:
    """A forked child never touches its parent's runs or profiler."""
    global _live, _live_lock
    _live_lock = threading.Lock()  # locks another parent thread held at fork stay held here
    _warn_state._seen_lock = threading.Lock()
    _live = None
    for session in list(_sessions):
        session._detach_after_fork()
    _sessions.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def flush_all(wait: bool = True) -> None:
    """Flush every session of this process (runs still recording end as ``partial``), then
    wait for their finishers, all within one ``AUTOPROF_FINISH_TIMEOUT_S``."""
    sessions = list(_sessions)
    for session in sessions:
        session.flush(wait=False)
    if wait:
        deadline = time.monotonic() + env.finish_timeout_s()
        for session in sessions:
            session.flush(timeout_s=max(0.0, deadline - time.monotonic()))


def _at_exit() -> None:
    global _exiting
    _exiting = True
    try:
        flush_all()
    except Exception as exc:  # pragma: no cover - nothing may escape at exit
        warn(f"autoprof: could not finish runs at exit: {exc!r}")


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        _atexit_registered = True
        atexit.register(_at_exit)
