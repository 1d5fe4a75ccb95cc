"""Who may drive a profiler: the owner thread, the one live session, and forked children.

Threads: the profiler is driven (start, step, stop) only by the thread that started it, the
owner (its native id, and the thread must be alive: torch crashes when another thread steps
or stops it, and Python reuses ``threading.get_ident()`` values). When the owner thread ends
before the schedule does, a guard in its ``threading.local`` is freed on that thread, and the
run is stopped there.

One process: only one torch profiler runs at a time; :data:`registry` knows which session's
(``live``) and every session (for the flush at exit).

Fork: a child never touches its parent's runs (an at-fork handler makes every session a
pass-through in the child). Kineto's exit handlers hang a child made by ``os.fork()`` once a
torch profiler ever ran in the parent, unless the child ends with ``os._exit()`` (as
``multiprocessing`` children do): see docs/reliability.md.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Protocol

from autoprof.record import warn as _warn_state


class Owned(Protocol):
    """What the registry and the guard need of a session."""

    def owner_ended(self) -> None: ...

    def detach_after_fork(self) -> None: ...


class Owner:
    """The thread that started a profiler: its native id and its thread object."""

    __slots__ = ("native_id", "thread")

    def __init__(self) -> None:
        self.native_id = threading.get_native_id()
        self.thread = threading.current_thread()

    def is_current(self) -> bool:
        """Is the calling thread this owner, alive? A native id is reused only after its
        thread ended (at exit the main thread already counts as stopped, yet it is still the
        owner)."""
        if self.native_id != threading.get_native_id():
            return False
        return self.thread is threading.current_thread() or self.thread.is_alive()

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    @property
    def name(self) -> str:
        return self.thread.name

    def guard(self, session: Owned, local: threading.local) -> None:
        """Stop ``session``'s run on this thread as it ends (call on the owner thread)."""
        local.guard = _OwnerGuard(session)


class _OwnerGuard:
    """Lives in the owner thread's ``threading.local``; Python frees it on that thread as
    the thread ends, which stops a run the thread left recording."""

    __slots__ = ("_session",)

    def __init__(self, session: Owned) -> None:
        self._session = weakref.ref(session)

    def __del__(self) -> None:
        session = self._session()
        if session is not None:
            try:
                session.owner_ended()
            except Exception:  # pragma: no cover - nothing may escape a dying thread
                pass


class Registry:
    """The process's sessions and the one whose torch profiler runs (``live``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: Any = None
        self.sessions: weakref.WeakSet[Any] = weakref.WeakSet()

    def release(self, session: object) -> None:
        with self.lock:
            if self.live is session:
                self.live = None

    def after_fork_in_child(self) -> None:
        """A forked child never touches its parent's runs or profiler."""
        self.lock = threading.Lock()  # locks another parent thread held at fork stay held
        _warn_state._seen_lock = threading.Lock()
        self.live = None
        for session in list(self.sessions):
            session.detach_after_fork()
        self.sessions.clear()


registry = Registry()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=registry.after_fork_in_child)
