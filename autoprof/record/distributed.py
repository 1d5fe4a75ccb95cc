"""Rank, world size and a run id shared by every rank of one torch.distributed job.

The id travels through the process group's own key-value store (the default c10d store)
with a timeout; never through a collective, which would hang when ranks call the decorated
function a different number of times.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
import sys
import threading
from collections import Counter
from dataclasses import dataclass

from autoprof import env

DEFAULT_TIMEOUT_S = env.DEFAULT_DIST_TIMEOUT_S
_sequence: Counter[str] = Counter()
_sequence_lock = threading.Lock()


@dataclass(frozen=True)
class DistInfo:
    rank: int
    world_size: int
    initialized: bool

    @property
    def worker(self) -> str:
        """The trace-file prefix: ``rank<R>`` under torch.distributed, else ``<host>_<pid>``."""
        if self.initialized:
            return f"rank{self.rank}"
        return f"{socket.gethostname()}_{os.getpid()}"


def dist_info() -> DistInfo:
    torch = sys.modules.get("torch")
    if torch is None:
        return DistInfo(0, 1, False)
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return DistInfo(dist.get_rank(), dist.get_world_size(), True)
    return DistInfo(0, 1, False)


def timeout_s() -> float:
    return env.dist_timeout_s()


def shared_run_id(name: str, local_id: str, info: DistInfo) -> tuple[str, str | None]:
    """Rank 0 publishes ``local_id`` for the n-th run of ``name``; other ranks read it.

    Returns (run_id, problem): on any store failure or timeout every rank keeps its own id
    and ``problem`` says why (the caller warns once).
    """
    if not info.initialized or info.world_size == 1:
        return local_id, None
    with _sequence_lock:
        _sequence[name] += 1
        key = f"autoprof/run_id/{name}/{_sequence[name]}"
    try:
        from torch.distributed import distributed_c10d

        store = distributed_c10d._get_default_store()
        if info.rank == 0:
            store.set(key, local_id)
            return local_id, None
        store.wait([key], _dt.timedelta(seconds=timeout_s()))
        return store.get(key).decode(), None
    except Exception as exc:  # the store is best effort: a missing id must not stop the job
        return local_id, f"could not share the run id through the c10d store ({exc})"
