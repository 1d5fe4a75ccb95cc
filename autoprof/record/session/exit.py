"""Interpreter exit: every run still recording ends ``partial`` and its finisher is waited
for, all within one ``AUTOPROF_FINISH_TIMEOUT_S``.

At exit no owner thread can be asked to stop any more: a profiler whose owner is still
running (a daemon thread) is abandoned, and its run keeps what was already exported.
"""

from __future__ import annotations

import atexit
import time
from typing import Any

from autoprof import env
from autoprof.record.session.owner import registry
from autoprof.record.warn import warn

_registered = False
_exiting = False  # the interpreter is exiting: no owner thread can be asked to stop any more


def is_exiting() -> bool:
    return _exiting


def flush_session(session: Any, wait: bool = True, timeout_s: float | None = None) -> None:
    """``session.flush``, but an error of autoprof's own is one warning, never the
    program's exception (``autoprof.flush()``, ``check``, the callbacks, exit)."""
    try:
        session.flush(wait=wait, timeout_s=timeout_s)
    except Exception as exc:
        warn(f"autoprof: could not end the run of {getattr(session, 'name', '?')!r} "
             f"({type(exc).__name__}: {exc}); the program goes on")


def flush_all(wait: bool = True) -> None:
    """Flush every session of this process (runs still recording end as ``partial``), then
    wait for their finishers, all within one ``AUTOPROF_FINISH_TIMEOUT_S``. Never raises
    autoprof's own errors."""
    sessions = list(registry.sessions)
    for session in sessions:
        flush_session(session, wait=False)
    if wait:
        deadline = time.monotonic() + env.finish_timeout_s()
        for session in sessions:
            flush_session(session, timeout_s=max(0.0, deadline - time.monotonic()))


def _at_exit() -> None:
    global _exiting
    _exiting = True
    try:
        flush_all()
    except Exception as exc:  # pragma: no cover - nothing may escape at exit
        warn(f"autoprof: could not finish runs at exit: {exc!r}")


def register() -> None:
    """Flush at exit (registered once, when the first session is made)."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(_at_exit)
