"""The process's heap in use, read twice per window to measure what its first recorded step
took (:mod:`.budget_fit`): glibc's ``mallinfo2`` (bytes malloc has handed out, so memory
freed and reused inside the step nets out), else the resident set (``/proc/self/statm``),
else None. No torch."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
           "fordblks", "keepcost")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS]


def _mallinfo2() -> Callable[[], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        call = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    call.restype = _MallInfo2

    def in_use() -> int:
        info = call()
        return int(info.uordblks + info.hblkhd)  # small blocks in use, plus mmap'd ones

    return in_use


def _resident() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


_reader: list[Callable[[], int] | None] = []


def heap_bytes() -> int | None:
    """The heap in use now (bytes), or None where neither reading exists."""
    if not _reader:
        _reader.append(_mallinfo2())
    reader = _reader[0]
    return reader() if reader is not None else _resident()
