"""The load's numpy arrays on ordinary pages, not transparent huge pages.

numpy asks the kernel for huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MB
or more. Where transparent huge pages are given to such requests only (``madvise``, a
common default, with defrag ``madvise``), the first write to each 2 MB of a fresh array
waits for the kernel to find (reclaiming or compacting if need be) and zero a huge page:
the events table's build, whose row-long temporaries of 6-8 MB at 1M events are made and
freed a few dozen times, paid that in almost every step (``nesting._depth``: 98-125 ms the
first time in the load with the advice, 31 ms without). Without the advice the load of
the synthetic 1M-event trace took 2.04-2.11 s where it took 2.26-2.50 s with it, at the
same peak (docs/performance.md); smaller tables (their columns under 4 MB) never ask.

``small_pages()`` turns numpy's advice off while the load runs and puts back what it was
(it is process-wide: nested and concurrent loads share one count, the last out restores
it). ``AUTOPROF_HUGE_PAGES=1`` leaves numpy's choice alone.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType

from autoprof import env


def _multiarray() -> ModuleType | None:
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, numpy 1
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


_SET: Callable[[bool], bool] | None = getattr(_multiarray(), "_set_madvise_hugepage", None)
_LOCK = threading.Lock()
_state = {"inside": 0, "before": True}


def huge_pages_advised() -> bool | None:
    """Whether numpy now advises huge pages for its large arrays (None: it cannot say)."""
    if _SET is None:
        return None
    with _LOCK:
        now = _SET(True)
        _SET(now)
    return now


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy's huge-page advice off inside (module doc)."""
    if _SET is None or env.huge_pages_kept():
        yield
        return
    with _LOCK:
        if _state["inside"] == 0:
            _state["before"] = _SET(False)
        _state["inside"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _state["inside"] -= 1
            if _state["inside"] == 0:
                _SET(bool(_state["before"]))
