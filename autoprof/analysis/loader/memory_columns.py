"""The ``[memory]`` events of each decoded chunk as numpy columns (``memory_events.py`` makes
them the memory table). numpy only: the decode helper's process (``helper.py``) builds these
without pandas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

MEMORY_EVENT = "[memory]"
_FIELDS = ("ts", "bytes_delta", "total_allocated", "total_reserved", "addr")


@dataclass
class MemoryColumns:
    """The memory events of one trace as numpy columns (file order, not yet sorted)."""

    ts: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    pid: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, np.int64))
    tid: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, np.int64))
    bytes_delta: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    total_allocated: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    total_reserved: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    addr: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    device_type: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, np.int64))
    device_id: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, np.int64))

    def __len__(self) -> int:
        return len(self.ts)


def memory_part(events: list[Any], pid: np.ndarray, tid: np.ndarray
                ) -> dict[str, np.ndarray] | None:
    """One chunk's ``[memory]`` events as ``MemoryColumns`` fields (None when it has none);
    ``pid``/``tid``: their id columns. ``columns.merge_chunks`` joins the chunks' parts."""
    n = len(events)
    if not n:
        return None
    args = list(map(attrgetter("args"), events))
    part = {"pid": pid, "tid": tid,
            "ts": np.fromiter(map(attrgetter("ts"), events), np.float64, count=n)}
    for name in _FIELDS[1:]:
        part[name] = np.fromiter(map(attrgetter(name), args), np.float64, count=n)
    for name in ("device_type", "device_id"):
        part[name] = _ints(map(attrgetter(name), args), n)
    return part


def _ints(values: Any, n: int) -> npt.NDArray[np.int64]:
    items = list(values)
    try:
        return np.fromiter(items, np.int64, count=n)
    except (TypeError, ValueError, OverflowError):
        return np.array([v if isinstance(v, int) and abs(v) < 2**62 else -1 for v in items],
                        dtype=np.int64)
