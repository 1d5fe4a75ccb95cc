"""autoprof's one warning category, and warn-once helpers."""

from __future__ import annotations

import threading
import warnings


class AutoprofWarning(UserWarning):
    """Profiling could not do something (write a run, start a profiler); the program goes on."""


_seen: set[str] = set()
_seen_lock = threading.Lock()


def warn(message: str) -> None:
    warnings.warn(message, AutoprofWarning, stacklevel=3)


def warn_once(key: str, message: str) -> None:
    """Warn the first time ``key`` is seen in this process."""
    with _seen_lock:
        if key in _seen:
            return
        _seen.add(key)
    warn(message)
