"""Analyses of a large run computed aside, in a forked child, while this process computes
others: the first summary of a large trace uses the machine's second core.

``Aside.start(analysis, names)`` forks; the child computes ``getattr(analysis, name)`` for
each name (``Analysis``'s cached properties: it reads the same frames, shared copy-on-write,
and runs the same code), sends the values back pickled through a pipe and exits with
``os._exit`` (no atexit handler, no flush of the parent's buffers, no profiler teardown).
``collect()`` waits for the answer and stores each value as the analysis's cached one, so the
parent never computes it. Warnings the child's analyses gave are given again in the parent.

Whatever goes wrong aside costs time, never the answer: a child that fails, dies, answers
something that is not its answer, or takes longer than ``GRACE_S`` plus ``FACTOR`` times the
parent's own part is killed and reaped, and the parent computes those analyses itself when
they are read (raising there any error an analysis raises). Used only where forking is safe
and pays: Linux, two cores or more, at least ``MIN_ROWS`` events, called from the main thread
(a server's worker threads may hold locks a child would need; the only other thread a load
starts, the Arrow cache writer, shares nothing the analyses use), and not under
``AUTOPROF_SUMMARY_FORK=0``.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from autoprof import env

MIN_ROWS = 250_000  # ~0.25 s of summary on one core: the fork costs a few ms
GRACE_S = 10.0
FACTOR = 10.0
_READ_BYTES = 1 << 20


class Computes(Protocol):
    """What ``Aside`` needs of an analysis: its events (their count) and, per name, a cached
    property (``functools.cached_property`` keeps its value in ``__dict__``)."""

    @property
    def events(self) -> Any: ...


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fork_pays(rows: int) -> bool:
    """Whether computing aside is allowed and worth a fork here (module doc)."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and rows >= MIN_ROWS and cores() >= 2 and env.summary_fork_enabled()
            and threading.current_thread() is threading.main_thread())


class Aside:
    """A forked child computing some of an analysis's properties (module doc)."""

    def __init__(self, analysis: Computes, names: tuple[str, ...], pid: int, fd: int) -> None:
        self._analysis = analysis
        self._names = names
        self._pid: int | None = pid
        self._fd = fd
        self._began = time.perf_counter()

    @staticmethod
    def start(analysis: Computes, names: Sequence[str]) -> Aside | None:
        """Fork a child computing ``names``; None where that is not allowed, does not pay, or
        the fork fails (the parent then computes everything itself)."""
        todo = tuple(n for n in names if n not in vars(analysis))
        if not todo or not fork_pays(len(analysis.events)):
            return None
        read_fd, write_fd = os.pipe()
        gc.freeze()  # the child's collections then leave the shared objects' pages alone
        try:
            with warnings.catch_warnings():  # 3.12+ warns of fork beside any other thread
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:
            gc.unfreeze()
            os.close(read_fd)
            os.close(write_fd)
            return None
        if pid == 0:  # pragma: no cover - the child (its answer is what the tests check)
            os.close(read_fd)
            _serve(analysis, todo, write_fd)
        gc.unfreeze()
        os.close(write_fd)
        return Aside(analysis, todo, pid, read_fd)

    def collect(self) -> bool:
        """Wait for the child's values and keep them as the analysis's own; True when it gave
        them all. Otherwise the child is stopped and nothing is kept."""
        if self._pid is None:
            return False
        took_s = time.perf_counter() - self._began
        body = _read_until_eof(self._fd, time.monotonic() + GRACE_S + FACTOR * took_s)
        self.close()
        try:
            status, values, caught = pickle.loads(body)
        except Exception:  # noqa: BLE001 - no answer, or not the child's: computed here
            return False
        if status != "ok" or not isinstance(values, dict) or set(values) != set(self._names):
            return False
        kept = vars(self._analysis)
        for name, value in values.items():
            kept.setdefault(name, value)
        for message, category, filename, lineno in caught:
            warnings.warn_explicit(message, category, filename, lineno)
        return True

    def close(self) -> None:
        """Stop the child if it still runs, reap it and close the pipe."""
        if self._pid is None:
            return
        pid, self._pid = self._pid, None
        os.close(self._fd)
        try:
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        except ChildProcessError:
            pass


@contextmanager
def computed_aside(analysis: Computes, names: Sequence[str]) -> Iterator[Aside | None]:
    """``Aside.start`` for the ``with`` block; the child is stopped and reaped when the block
    ends, whether or not it was collected (an error or Ctrl-C in the parent)."""
    side = Aside.start(analysis, names)
    try:
        yield side
    finally:
        if side is not None:
            side.close()


def _serve(analysis: Computes, names: tuple[str, ...], fd: int) -> None:  # pragma: no cover
    """The child: compute, answer, and leave without running anything of the parent's."""
    try:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                values = {name: getattr(analysis, name) for name in names}
            notes = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
            body = pickle.dumps(("ok", values, notes), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001 - the parent computes them and meets the error
            body = pickle.dumps(("error", None, []))
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(body)
    finally:
        os._exit(0)


def _read_until_eof(fd: int, deadline: float) -> bytes:
    """Everything written to ``fd`` until its writer closes it; b"" past ``deadline``."""
    parts: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b""
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except InterruptedError:  # pragma: no cover - retried by Python itself since 3.5
            continue
        if not ready:
            return b""
        part = os.read(fd, _READ_BYTES)
        if not part:
            return b"".join(parts)
        parts.append(part)
