"""Results of analysis calls, remembered per loaded Run so reruns do not recompute them.

`Run` methods recompute on every call (they are thin calls into pure functions); a page
rerun on every widget change would redo them. This keeps each (run, method, arguments)
result while the Run is alive. Callers must treat results as read-only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any
from weakref import WeakKeyDictionary

_LOCK = threading.Lock()
_PER_RUN: WeakKeyDictionary[Any, dict[tuple[Any, ...], Any]] = WeakKeyDictionary()
_MULTI: OrderedDict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = OrderedDict()
_MULTI_MAX = 8


def analysed(run: Any, method: str, **kwargs: Any) -> Any:
    """`run.<method>(**kwargs)` (or the property `run.<method>`), computed once per run."""
    key = (method, tuple(sorted(kwargs.items())))
    with _LOCK:
        table = _PER_RUN.setdefault(run, {})
        if key in table:
            return table[key]
    attr = getattr(run, method)
    value = attr(**kwargs) if callable(attr) else attr
    with _LOCK:
        table[key] = value
    return value


def across(fn: Callable[[list[Any]], Any], runs: Sequence[Any]) -> Any:
    """`fn(runs)` for a list of runs (e.g. analysis.compare), remembered for the same runs."""
    key = tuple(id(r) for r in runs)
    with _LOCK:
        hit = _MULTI.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], runs, strict=True)):
            _MULTI.move_to_end(key)
            return hit[1]
    value = fn(list(runs))
    with _LOCK:
        _MULTI[key] = (tuple(runs), value)
        while len(_MULTI) > _MULTI_MAX:
            _MULTI.popitem(last=False)
    return value
