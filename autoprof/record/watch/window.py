"""A watched function's triggered windows: each is a fresh session with the function's own
options (its warm-up calls and schedule), whose run folder goes beside the first one's and
whose manifest says why it was recorded (``trigger``, :mod:`autoprof.runfolder.trigger`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from autoprof.record.session import Session
from autoprof.record.warn import note
from autoprof.record.watch import signals
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


def start_watching(session: Session) -> bool:
    """The first window of a watched function is over (its session retires): watch its next
    calls. False (a plain pass-through) when there is nothing to compare with (no run
    folder was written) or autoprof has no watch options for it."""
    watch = session.options.watch
    if watch is None or session.run_dir is None:
        return False
    healthy_run_id = session.run_dir.name
    pid = os.getpid()

    def start_window(trigger: Trigger) -> bool:
        with _lock:
            if watcher.window is not None or os.getpid() != pid:
                return False  # one at a time; never in a forked child
            watcher.window = _open_window(session, watcher, trigger, healthy_run_id)
            return True

    watcher = Watcher(session.name, watch, calls_so_far(session), start_window)
    session.watcher = watcher  # type: ignore[attr-defined]  # read by the decorator's wrapper
    signals.register(watcher)
    return True


def _open_window(first: Session, watcher: Watcher, trigger: Trigger,
                 healthy_run_id: str) -> Session:
    window = Session(first.name, first.options, first.qualname, first.source_file,
                     first.source_line)
    record = TriggerRecord(kind=trigger.kind, at_call=trigger.at_call,
                           baseline_ms=trigger.baseline_ms, current_ms=trigger.current_ms,
                           healthy_run_id=healthy_run_id, window=watcher.windows + 1)
    window.manifest_extra = {"trigger": record.to_json()}
    window.on_done = lambda: watcher.window_over(calls_so_far(window) - 1)
    watcher.opened.append(window)  # kept: a flush waits for its finisher
    note(f"autoprof: {first.name!r} records again ({record.describe()})")
    return window


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
