"""SIGTERM while a window records: the steps already recorded are written, then SIGTERM
means what it meant before.

SIGTERM's default action ends the process at once, and the profiler's events, held in
memory until the window's cycle ends, would be lost. While a window records on the main
thread, autoprof's handler is installed over the one the program had (its default, or a
Python handler of its own; an ignored SIGTERM, or a handler set outside Python, is left
alone). On SIGTERM it asks the recording session to end its window (``partial``, the reason
``SIGTERM``): at once where the main thread is in the program's own code, else at the
session's next safe point (the end of the step in progress). Then the previous meaning
follows: the program's handler is called, or, with the default, the default is put back and
the signal sent again, so the process ends by SIGTERM as it would have. The previous handler
is back when the window ends. No torch, no session here: the session registers its
``Ender``.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

# the recording session's answer to SIGTERM: end the window now (True) or at its next safe
# point (False, it then calls :func:`deliver`); ``safe``: the main thread is in the
# program's own code, so the profiler may be stopped from the handler
Ender = Callable[[bool], bool]

_RECORD = str(Path(__file__).resolve().parents[1])  # autoprof/record
# where the program's function is called: the frames inside it are the program's
_CALLERS = frozenset({"_recorded_step", "_finish_call", "wrapper", "window_call"})
_TORCH_PROFILER = (f"{os.sep}torch{os.sep}profiler{os.sep}",
                   f"{os.sep}torch{os.sep}autograd{os.sep}profiler")

_ender: Ender | None = None
_previous: Any = None  # the handler ours replaced (SIG_DFL or a callable)
_installed = False
pending = False  # a SIGTERM waits for the session's next safe point (read per step)


def install(ender: Ender) -> bool:
    """Our handler from now, over the program's (main thread only; an ignored SIGTERM and
    a handler set outside Python are left alone)."""
    global _ender, _previous, _installed
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGTERM)
    if current is not _on_sigterm:
        if current is None or current == signal.SIG_IGN:
            return False
        _previous = current
    signal.signal(signal.SIGTERM, _on_sigterm)
    _ender, _installed = ender, True
    return True


def uninstall() -> None:
    """The previous handler back (from the main thread; from another one, the handler finds
    no session and gives the signal its previous meaning). A SIGTERM that waited for the
    window's end (``pending``) then takes its previous meaning."""
    global _ender, _installed, pending
    _ender = None
    if _installed and threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, _previous)
        _installed = False
    if pending:
        pending = False
        _resend()


def _resend() -> None:
    if callable(_previous):
        return  # the program's handler was called when the signal came
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)  # elsewhere: our handler, now with no session


def safe_frame(frame: FrameType | None) -> bool:
    """Is the interrupted code the program's own (no autoprof or torch.profiler frame
    between it and the call of the program's function, or the top of the stack)?"""
    while frame is not None:
        file = frame.f_code.co_filename
        if file.startswith(_RECORD):
            return frame.f_code.co_name in _CALLERS
        if any(part in file for part in _TORCH_PROFILER):
            return False
        frame = frame.f_back
    return True


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    global pending
    ender = _ender
    ended = True
    if ender is not None:
        try:
            ended = ender(safe_frame(frame))
        except Exception:  # pragma: no cover - never in the way of the signal
            ended = True
    if callable(_previous):  # the program's handler: its meaning, at once
        previous = _previous
        pending = not ended  # our window still ends at the session's next safe point
        if ended:
            uninstall()
        previous(signum, frame)
    elif ended:
        deliver()
    else:
        pending = True


def deliver() -> None:
    """SIGTERM's previous meaning now (the window has ended): the previous handler back,
    and, where that is the default, the signal sent again (the process ends by it)."""
    global pending
    pending = True
    uninstall()
