"""SIGTERM while a triggered window records: the steps already recorded are written.

SIGTERM's default action ends the process at once, and the profiler's events, held in
memory until the window's cycle ends, are lost. While a triggered window records (and only
where the program left SIGTERM to its default), SIGTERM raises :class:`Terminated` in the
main thread instead: the window ends with the steps it recorded (the run says ``failed``
with ``Terminated`` and the phase when it lands in a step, ``partial`` when between two, at
the exit's flush), and the process exits with status 143 as SIGTERM's default would. The
program's own handler, when it has one, is left alone; the default comes back when the
window ends.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

SIGTERM_STATUS = 128 + int(signal.SIGTERM)
_installed = False
_recording = False  # a triggered window records: SIGTERM raises, else SIGTERM's default


class Terminated(SystemExit):
    """SIGTERM arrived while autoprof recorded a window (a SystemExit with status 143)."""

    def __str__(self) -> str:
        return "SIGTERM while autoprof recorded a triggered window; the process exits (143)"


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _recording:
        raise Terminated(SIGTERM_STATUS)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the window ended on another thread
    os.kill(os.getpid(), signal.SIGTERM)


def install() -> bool:
    """SIGTERM raises :class:`Terminated` from now (main thread, default handler only)."""
    global _installed, _recording
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, _on_sigterm):
        return False
    signal.signal(signal.SIGTERM, _on_sigterm)
    _installed = _recording = True
    return True


def uninstall() -> None:
    """The default back (only where :func:`install` set ours, and ours is still there;
    from another thread, at the next SIGTERM)."""
    global _installed, _recording
    _recording = False
    if not _installed or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _installed = False
_recording = False  # a triggered window records: SIGTERM raises, else SIGTERM's default
