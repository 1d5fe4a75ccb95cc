"""autoprof's one warning category, warn-once helpers, and the ``autoprof`` logger's notes."""

from __future__ import annotations

import logging
import sys
import threading
import warnings

logger = logging.getLogger("autoprof")


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


def note(message: str) -> None:
    """One line for the person running the program (where a run went, a slow start), at
    INFO on the ``autoprof`` logger. With no logging configured anywhere it goes to stderr;
    ``logging.getLogger("autoprof").setLevel(logging.WARNING)`` silences it."""
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.INFO)
        logger.propagate = False
    logger.info(message)
