"""Under torch.distributed, a drift (or a signal) on one rank records the same window on every
rank: the straggler is recorded where it happens, and its peers beside it.

The rank whose watcher begins such a window counts it in the process group's key-value store
(the default c10d store, as the shared run id does; never a collective, which would hang when
the ranks' calls differ) and writes its rank under that count. A daemon thread of each
process reads the count every ``POLL_S`` seconds and asks its watcher of the same name for a
window of kind ``peer`` at its next call, for every count another rank wrote. Nothing runs
in the watched calls themselves. The store is best effort: a failure stops the polling with
one note, and the job goes on.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from autoprof.record.warn import note
from autoprof.record.watch import signals
from autoprof.record.watch.watcher import Watcher

POLL_S = 0.2
PROPAGATED = ("drift", "signal")  # what one rank alone sees (a call number, a trigger() call
#                                   in the program: every rank makes its own)
_lock = threading.Lock()
_poller: threading.Thread | None = None


def _group() -> tuple[Any, int] | None:
    """The default store and this rank, where torch.distributed is initialized with more than
    one rank; else None."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    if dist.get_world_size() < 2:
        return None
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store(), dist.get_rank()


def _count_key(name: str) -> str:
    return f"autoprof/watch/{name}/asks"


def publish(watcher: Watcher, kind: str) -> None:
    """This rank began a window of ``kind``: ask every other rank for one."""
    if kind not in PROPAGATED or not watcher.watch.peers:
        return
    try:
        group = _group()
        if group is None:
            return
        store, rank = group
        n = int(store.add(_count_key(watcher.name), 1))
        store.set(f"{_count_key(watcher.name)}/{n}", str(rank))
        watcher.peer_seen = max(watcher.peer_seen, n)
    except Exception as problem:  # the store is best effort
        note(f"autoprof: could not ask the other ranks to record ({problem})")


def start() -> None:
    """The polling thread, once per process, where torch.distributed has several ranks."""
    global _poller
    with _lock:
        if _poller is not None or _group() is None:
            return
        _poller = threading.Thread(target=_poll, name="autoprof-watch-peers", daemon=True)
        _poller.start()


def _poll() -> None:
    while True:
        time.sleep(POLL_S)
        try:
            group = _group()
            if group is None:
                return  # the process group is gone
            for watcher in signals.live():
                if watcher.watch.peers:
                    read(watcher, *group)
        except Exception as problem:
            note(f"autoprof: stopped watching the other ranks' windows ({problem})")
            return


def read(watcher: Watcher, store: Any, rank: int) -> int:
    """Ask ``watcher`` for a window for each count another rank wrote since the last read;
    returns how many asked."""
    key = _count_key(watcher.name)
    n = int(store.add(key, 0))
    asked = 0
    for i in range(watcher.peer_seen + 1, n + 1):
        origin = int(store.get(f"{key}/{i}").decode())
        if origin != rank:
            watcher.ask("peer", origin)
            asked += 1
    watcher.peer_seen = max(watcher.peer_seen, n)
    return asked
