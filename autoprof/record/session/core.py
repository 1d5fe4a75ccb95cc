"""One profiling session per decorated function or region name.

``warmup_calls`` (untraced, timed calls) -> ``profiling`` (torch.profiler, one step per call) ->
``after_window`` (the next calls, timed) -> ``done`` (pass-through). ``_fire`` looks up
(state, event) in :data:`table.TABLE`, enters the next state and runs the row's actions. The
session is one class made of mixins, one job each: :mod:`steps` (the end of each kind of
call), :mod:`starting` (the profiler's start, flush), :mod:`fitting` (the window fitted to its
budget), :mod:`interrupt` (why a window ended early, SIGTERM), :mod:`after_window` (the calls
timed after it) and :mod:`actions` (what each event does). The profiler is
:class:`driver.Driver`; the run folder and the finisher hand-over are :mod:`writer`; who may
drive the profiler is :mod:`owner`; the flush at exit is :mod:`exit`.

Only one torch profiler runs at a time in a process: a session that finds another one
recording only adds its ``record_function`` label. Calls from other threads during the
profiled window run unrecorded, are not steps, and warn once. A flush from another thread
asks the owner to stop at its next call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autoprof import runfolder as artifacts
from autoprof.record import export
from autoprof.record.options import Options
from autoprof.record.session import exit as _exit
from autoprof.record.session.actions import failure
from autoprof.record.session.after_window import AFTER
from autoprof.record.session.driver import (
    Driver,
    profiler_enabled,
    record_function,
    sync_if_cuda_in_use,
    total_steps,
)
from autoprof.record.session.inputs import read_inputs
from autoprof.record.session.owner import Owner, registry
from autoprof.record.session.steps import Steps
from autoprof.record.session.table import RECORDING, TRANSITIONS, Event, State, step
from autoprof.record.session.writer import Identity, RunState

# A call's token: (kind, payload) -- what ``end`` must close (AFTER: a call after the window)
Token = tuple[int, Any]
PASS, LABEL, WARMUP, STEP, WAIT_STEP = 0, 1, 2, 3, 4
PASS_TOKEN: Token = (PASS, None)


class Session(Steps):
    """The profiling state of one decorated function or one region name."""

    def __init__(self, name: str, options: Options, qualname: str,
                 source_file: str | None, source_line: int | None) -> None:
        self.name = name
        self.options = options
        self.qualname = qualname
        self.source_file = source_file
        self.source_line = source_line
        self._who = Identity(name, qualname, source_file, source_line)
        self.state = State.WARMUP_CALLS
        self.done = False  # recording is over (AFTER, DONE, COVERED); read without the lock
        self.run_dir: Path | None = None
        self.on_done: Callable[[], None] | None = None
        self.warmup_call_ms: list[float] = []
        # between two warm-up calls of one thread: from the end of one (after its closing
        # sync) to the start of the next (before its opening one): the caller's loop, untraced
        self.warmup_between_ms: list[float] = []
        self.idle_sync_ms: list[float] = []  # a closing sync's own cost, nothing to wait for
        # the bytes of the call's CUDA tensor arguments, and the arguments themselves
        self.call_input_bytes: int | None = None  # (inputs.py), read on the first warm-up call
        self.call_inputs: list[str] | None = None
        self._warmup_begun = 0
        self._lock = threading.RLock()
        self._local = threading.local()
        self._prof: Driver | None = None
        self._owner: Owner | None = None
        # per call, not state: the owner thread is inside one of our steps (nested calls
        # only add their label), and the owner's native id while its next call is a plain
        # recorded step (the decorator's fast path)
        self._in_step = False
        self._stepping_thread: int | None = None
        self._record_function: Any = None
        self._total_steps = total_steps(options)
        self._sync_each_step = False  # options.sync on a run that records CUDA
        self._run: RunState | None = None
        self._finisher: export.Finisher | None = None
        self._handed_over = False
        self._ending: tuple[artifacts.Status, dict[str, str] | None] = ("partial", None)
        self.label = artifacts.kineto_label(name)  # what Kineto writes into the trace
        self._warned = self._unrecorded_noted = False
        self.blocked_by: str | None = None  # the run recording when this one could not start
        registry.sessions.add(self)
        _exit.register()

    def __repr__(self) -> str:
        return f"<autoprof Session {self.name!r} state={self.state.value} run_dir={self.run_dir}>"

    @property
    def covered(self) -> bool:
        """Retired inside another session's step: its calls only add their label."""
        return self.state is State.COVERED

    # -- the table -------------------------------------------------------------------

    def _fire(self, event: Event, status: artifacts.Status = "partial",
              error: dict[str, str] | None = None) -> None:
        """Enter the state the table gives for ``event``, then run its actions (called
        with the lock held, or on a thread no other one can reach the session from). Never
        raises autoprof's own errors: a refused event or a failed action gives up the run
        where it stands (``_give_up``); an interrupt of the user's still goes on."""
        try:
            row = step(self.state, event)
            self._ending = (status, error)
            self._enter(row.to)
            for action in row.actions:
                getattr(self, action)()
        except Exception as problem:
            self._give_up(event, problem)

    def _enter(self, state: State) -> None:
        if (self.state, state) not in TRANSITIONS:
            raise RuntimeError(f"autoprof: no transition {self.state.value} -> {state.value}")
        self.state = state
        self.done = state in (State.AFTER, State.DONE, State.COVERED)

    # -- the two halves of one call (or one region entry) -----------------------------

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
            return self._finish_call(fn, args, kwargs, self.begin(args, kwargs))
        self._in_step = True
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            self._end_recorded_step(rf, exc)
            raise
        try:  # _end_recorded_step(rf, None), one frame less
            self._end_step(rf, None)
        except Exception as problem:  # pragma: no cover - defensive
            self._warn(f"autoprof: internal problem in {self.name!r}: {problem!r}")
        return result

    def _end_recorded_step(self, rf: Any, exc: BaseException | None) -> None:
        try:
            self._end_step(rf, None if exc is None else failure(exc))
        except Exception as problem:  # pragma: no cover - defensive
            self._warn(f"autoprof: internal problem in {self.name!r}: {problem!r}")

    def _finish_call(self, fn: Callable[..., Any], args: tuple[Any, ...],
                     kwargs: dict[str, Any], token: Token) -> Any:
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            self.end(token, exc)
            raise
        self.end(token, None)
        return result

    def begin(self, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Token:
        """Never raises: on an internal problem the call runs unprofiled (one warning).
        ``args``, ``kwargs``: a decorated call's arguments (a region has none)."""
        now_ns = time.perf_counter_ns()  # the first thing: before it, the caller's loop
        local = self._local
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        try:
            return self._begin(depth, now_ns, args, kwargs)
        except Exception as problem:  # pragma: no cover - defensive
            self._warn(f"autoprof: internal problem in {self.name!r}: {problem!r}")
            return PASS_TOKEN

    def _begin(self, depth: int, now_ns: int, args: tuple[Any, ...],
               kwargs: dict[str, Any] | None) -> Token:
        if self.state is State.AFTER and depth == 0 and not profiler_enabled():
            return self._begin_after(now_ns)
        if self._in_step and self._owner_native_id() == threading.get_native_id():
            return self._label()  # nested in our own step (the fast path keeps no depth)
        if depth == 0 and not self.done:
            live = registry.live
            if live is not None and live is not self and live._in_step:
                if live._owner_native_id() == threading.get_native_id():
                    with self._lock:
                        self._fire(Event.NESTED)  # nested in another session's step
                    return self._label()
            with self._lock:
                return self._begin_locked(now_ns, args, kwargs)
        return self._label()

    def _begin_locked(self, now_ns: int, args: tuple[Any, ...], kwargs: dict[str, Any] | None
                      ) -> Token:
        if self.state is State.WARMUP_CALLS and self._warmup_begun < self.options.warmup_calls:
            self._warmup_begun += 1
            if self.call_input_bytes is None and kwargs is not None:  # before it is timed
                self.call_input_bytes, self.call_inputs = read_inputs(args, kwargs)
            self._note_between(now_ns)
            sync_if_cuda_in_use()
            return (WARMUP, time.perf_counter_ns())
        if self.state is State.WARMUP_CALLS and len(self.warmup_call_ms) >= self._warmup_begun:
            self._try_start()  # not while another thread's warm-up call still runs
        if self.state not in RECORDING or self._prof is None:
            return self._label()
        if not self._is_owner():
            self._other_thread()
            return self._label()
        if self.state is State.STOP_ASKED:
            self._fire(Event.OWNER_CALLED)
            return self._label()
        timed = self._before_recording()
        if timed:
            sync_if_cuda_in_use()
        rf = self._record_function(self.label)
        rf.__enter__()
        self._in_step = True
        if timed:
            return (WAIT_STEP, (rf, time.perf_counter_ns()))
        return (STEP, rf)

    def end(self, token: Token, exc: BaseException | None) -> None:
        """Never raises: profiling must not break the user's program."""
        kind, payload = token
        exc = failure(exc)
        try:
            if kind == STEP:
                self._end_step(payload, exc)
            elif kind == LABEL:
                payload.__exit__(None, None, None)
            elif kind == WARMUP:
                self._end_warmup(payload, exc)
            elif kind == WAIT_STEP:
                rf, started_ns = payload
                self._end_wait_step(rf, started_ns, exc)
            elif kind == AFTER:
                self._end_after(payload)
        except Exception as problem:  # pragma: no cover - defensive
            self._warn(f"autoprof: internal problem in {self.name!r}: {problem!r}")
        finally:
            self._local.depth -= 1
        if kind == WARMUP:  # the last thing before returning: what follows is the caller's
            self._local.warmup_ended_ns = time.perf_counter_ns()

    def _label(self) -> Token:
        if not profiler_enabled():
            return PASS_TOKEN
        rf = record_function()(self.label)
        rf.__enter__()
        return (LABEL, rf)
