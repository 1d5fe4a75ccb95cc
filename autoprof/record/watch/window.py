"""A watched function's triggered windows: each is a fresh session with the function's own
options (its warm-up calls and schedule), whose run folder goes beside the first one's and
whose manifest says why it was recorded (``trigger``, :mod:`autoprof.runfolder.trigger`)."""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from autoprof.record.session import Session
from autoprof.record.session.driver import cuda_in_use, torch_module
from autoprof.record.warn import note
from autoprof.record.watch import budget, peers, signals, timeline
from autoprof.record.watch.config import Watch
from autoprof.record.watch.device_pace import DeviceWatcher
from autoprof.record.watch.watcher import Trigger, Watcher
from autoprof.runfolder.trigger import TriggerRecord

_lock = threading.Lock()


def calls_so_far(session: Session) -> int:
    """The calls a session took before its watching begins: its warm-up calls, its profiler
    steps, and the calls after its window (the timed ones, then on CUDA the block of calls
    timed back to back and the call that ended it)."""
    run = session._run
    calls = len(session.warmup_call_ms)
    if run is None:
        return calls
    calls += run.steps_done + len(run.after_window_call_ms)
    if run.pace is not None:
        calls += run.pace.ended + 1  # the call that read the block ended it, uncounted
    return calls


def start_watching(session: Session) -> Watcher | None:
    """The first window of a watched function is over (its session retires): watch its next
    calls (the watcher, also set as ``session.watcher``). None (a plain pass-through) when
    there is nothing to compare with (no run folder was written) or no watch options."""
    watch = session.options.watch
    if watch is None or session.run_dir is None:
        return None
    pid = os.getpid()
    fits: list[budget.Fit] = []  # the budget, fitted at the first trigger

    def start_window(trigger: Trigger) -> bool:
        with _lock:
            if watcher.window is not None or os.getpid() != pid:
                return False  # one at a time; never in a forked child
            if not fits:
                fits.append(_fit(session, watch.max_trace_mb, watch.max_host_mb))
            if not fits[0].fits:
                return False
            watcher.window = _open_window(session, watcher, trigger, fits[0])
        peers.publish(watcher, trigger.kind)
        return True

    watcher = _watcher(session, watch, start_window)
    session.watcher = watcher  # type: ignore[attr-defined]  # read by the decorator's wrapper
    signals.register(watcher)
    watcher.home = session.run_dir
    if watch.peers:
        peers.start()  # the other ranks' asks, polled off the watched calls
    _register_exit()
    return watcher


def _watcher(session: Session, watch: Watch, start_window: Callable[[Trigger], bool]
             ) -> Watcher:
    """The device's clock where the first window recorded CUDA work and ``clock`` allows
    it (:mod:`.device_pace`), else the host's."""
    calls = calls_so_far(session)
    run = session._run
    if watch.clock == "auto" and run is not None and run.uses_cuda and cuda_in_use():
        torch = torch_module()
        return DeviceWatcher(session.name, watch, calls, start_window, torch.cuda,
                             getattr(torch, "_C", None))
    return Watcher(session.name, watch, calls, start_window)


def _fit(first: Session, max_trace_mb: float, max_host_mb: float) -> budget.Fit:
    """The triggered windows' budget, predicted from the healthy window's trace per step
    (a note when it cuts the schedule, or when not even one step fits)."""
    run_dir, run = first.run_dir, first._run
    assert run_dir is not None
    per_step = budget.bytes_per_step(run_dir, run.recorded if run is not None else 0)
    fitted = budget.fit(first.options.schedule, max_trace_mb, per_step, run_dir.name,
                        max_host_mb)
    per_mb = fitted.trace_mb_per_step
    if not fitted.fits:
        note(f"autoprof: {first.name!r} records no triggered window: one step's trace "
             f"({per_mb:.3g} MB) is over Watch.max_trace_mb={max_trace_mb:g} or its host "
             f"memory over Watch.max_host_mb={max_host_mb:g}")
    elif (fitted.active, fitted.repeat) != (fitted.asked_active, fitted.asked_repeat):
        note(f"autoprof: {first.name!r}'s triggered windows record {fitted.active} active "
             f"step(s) x {fitted.repeat} cycle(s), not {fitted.asked_active} x "
             f"{fitted.asked_repeat}: {per_mb:.3g} MB of trace a step, "
             f"Watch.max_trace_mb={max_trace_mb:g}")
    return fitted


def _open_window(first: Session, watcher: Watcher, trigger: Trigger,
                 fitted: budget.Fit) -> Session:
    options = first.options
    schedule = budget.fitted_schedule(options.schedule, fitted)
    if schedule is not options.schedule:
        options = replace(options, schedule=schedule)
    window = Session(first.name, options, first.qualname, first.source_file,
                     first.source_line)
    record = TriggerRecord(kind=trigger.kind, at_call=trigger.at_call,
                           baseline_ms=trigger.baseline_ms, current_ms=trigger.current_ms,
                           healthy_run_id=fitted.from_run, window=watcher.windows + 1,
                           from_rank=trigger.from_rank, rule=trigger.rule,
                           baseline_step_us=trigger.baseline_us,
                           recent_step_us=trigger.recent_us,
                           threshold_pct=float(watcher.watch.threshold_pct))
    window.manifest_extra = {"trigger": record.to_json(), "budget": fitted.to_json()}
    window.times_after_window = first.times_after_window  # a region's: not timed

    marked = {"kind": trigger.kind, "at_call": trigger.at_call, "window": record.window,
              "run_id": None, "calls": None}

    def on_done() -> None:
        calls = calls_so_far(window)
        watcher.window_over(calls - 1)
        marked.update(run_id=None if window.run_dir is None else window.run_dir.name,
                      calls=calls)
        write_timeline(watcher)

    window.on_done = on_done
    watcher.opened.append(window)  # kept: a flush waits for its finisher
    watcher.cut_timeline()
    watcher.timeline.windows.append(marked)
    write_timeline(watcher)
    note(f"autoprof: {first.name!r} records again ({record.describe()})")
    return window


def write_timeline(watcher: Watcher) -> None:
    """The watcher's step times and windows, into its healthy run folder's ``watch.json``."""
    run_dir = watcher.home
    if run_dir is not None:
        data = watcher.timeline.as_json(watcher.name, run_dir.name, watcher.calls,
                                        watcher.first_window_calls)
        data["clock"] = watcher.clock
        timeline.write(run_dir, data)


_exit_registered = False


def _register_exit() -> None:
    global _exit_registered
    if not _exit_registered:
        _exit_registered = True
        atexit.register(_write_all)


def _write_all() -> None:
    """At exit: every live watcher's step times (a folder that cannot be written is let be)."""
    for watcher in list(signals.live()):
        write_timeline(watcher)


def window_call(watcher: Watcher, fn: Callable[..., Any], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """One call of the function while a triggered window records (its session's two halves,
    as the decorator's wrapper does for the first window)."""
    window = watcher.window
    if not isinstance(window, Session):  # ended meanwhile (another thread's call)
        return fn(*args, **kwargs)
    token = window.begin(args, kwargs)
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:
        window.end(token, exc)
        raise
    window.end(token, None)
    return result


class WatchedRegion:
    """What ``autoprof.region(name)`` returns once the region's first window is over and it
    is watched: the context manager itself (no object made per entry). Each entry's start
    goes to the watcher; an entry that begins (or falls in) a triggered window is that
    window's, its token kept on this thread's stack until its exit. While no window entry
    is open (``_open``, every thread) an entry only ticks and its exit does nothing; while
    one is, every entry pushes (None when it is not a window's) and every exit pops, last-in
    first-out, as ``with`` blocks nest on one thread."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self._local = threading.local()
        self._open = 0  # window entries not yet exited (every thread)

    def __enter__(self) -> None:
        watcher = self.watcher
        if watcher.window is None and not watcher.tick(time.perf_counter_ns()):
            if self._open:  # inside an open window entry: pair on this thread's stack
                self._stack().append(None)
            return
        window = watcher.window
        entry = (window, window.begin()) if isinstance(window, Session) else (None, None)
        with _lock:
            self._open += 1
        self._stack().append(entry)

    def _stack(self) -> list[tuple[Session | None, Any] | None]:
        stack: list[tuple[Session | None, Any] | None] | None = getattr(
            self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if not self._open:
            return
        stack = self._stack()
        entry = stack.pop() if stack else None
        if entry is None:
            return
        with _lock:
            self._open -= 1
        window, token = entry
        if window is not None:
            window.end(token, exc)
