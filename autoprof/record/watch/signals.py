"""The explicit triggers: ``autoprof.trigger()`` and SIGUSR2, for every live watcher.

A signal handler runs in the main thread between two bytecodes; it only marks the watchers
(the next call of each begins a window), so it is safe wherever the program is.
"""

from __future__ import annotations

import signal
import threading
import weakref
from types import FrameType

from autoprof.record.warn import note, warn_once
from autoprof.record.watch.watcher import Kind, Watcher

SIGNAL_NAME = "SIGUSR2"
_watchers: weakref.WeakSet[Watcher] = weakref.WeakSet()
_installed = False


def register(watcher: Watcher) -> None:
    """A watcher starts: the triggers reach it from now (and SIGUSR2, if it asks)."""
    _watchers.add(watcher)
    if watcher.watch.signal:
        _install()


def live() -> list[Watcher]:
    """Every watcher of this process still alive."""
    return list(_watchers)


def trigger(name: str | None = None) -> int:
    """Record one more window of every watched function (or of the one called ``name``),
    beginning at its next call; returns how many were asked. A function not watched
    (``@autoprof(watch=True)``), or still in its first window, is not among them."""
    return _ask("manual", name)


def _ask(kind: Kind, name: str | None) -> int:
    asked = 0
    for watcher in list(_watchers):
        if name is None or watcher.name == name:
            watcher.ask(kind)
            asked += 1
    if not asked and kind == "manual":
        warn_once("trigger-none", "autoprof.trigger(): no watched function "
                  f"{'' if name is None else repr(name) + ' '}is past its first window; "
                  "nothing records (decorate with @autoprof(watch=True))")
    return asked


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _ask("signal", None)


def _install() -> None:
    """Install the SIGUSR2 handler once, from the main thread, where the program has none."""
    global _installed
    sig = getattr(signal, SIGNAL_NAME, None)
    if _installed or sig is None or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    current = signal.getsignal(sig)
    if current not in (signal.SIG_DFL, None):
        note(f"autoprof: {SIGNAL_NAME} has a handler of the program's own; it does not "
             "trigger a window (call autoprof.trigger() instead)")
        return
    signal.signal(sig, _on_signal)
