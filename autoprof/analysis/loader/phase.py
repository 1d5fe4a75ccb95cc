"""Named phases of the analysis after the load, for a progress line.

The slow parts of a first open say which part they are in (`phase("predictions")`); a
caller that shows progress listens for the duration of its call (`listening(callback)`).
Without a listener a phase costs one context-variable read. A listener's own error never
reaches the analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Listener = Callable[[str], None]
_LISTENER: ContextVar[Listener | None] = ContextVar("autoprof_phase_listener", default=None)


def phase(name: str) -> None:
    """Tell the listener, if any, that the analysis is now in phase `name`."""
    listener = _LISTENER.get()
    if listener is None:
        return
    try:
        listener(name)
    except Exception:  # noqa: BLE001 - a progress line never fails the analysis
        return


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Call `listener(name)` at each phase the analysis enters inside this block."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
