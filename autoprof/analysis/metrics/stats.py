"""Small helpers shared by the diagnostics analyses: column checks, interval unions, steps.

Every function here is pure and works on numpy arrays or the events table
(docs/architecture.md); nothing imports torch.
"""

from __future__ import annotations

import bisect
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import NOT_CPU_WORK_CATS, STEP_NAME
from autoprof.analysis.metrics.codes import first_seen_dense, mask_of, own_codes

# Factorized string columns, keyed by their immutable Arrow data (see `factorized`).
_FACTORIZED: OrderedDict[int, tuple[weakref.ref[object], np.ndarray, np.ndarray]] = (
    OrderedDict())
_FACTORIZED_MAX = 8
_FACTORIZED_LOCK = threading.Lock()


class MissingColumnsError(ValueError):
    """The events table lacks columns an analysis needs (the message names them)."""


def require_columns(events: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise MissingColumnsError naming every column of `columns` absent from `events`."""
    missing = [c for c in columns if c not in events.columns]
    if missing:
        raise MissingColumnsError(
            f"{what}: the events table lacks column(s) {missing} "
            f"(has: {sorted(map(str, events.columns))})"
        )


def for_rank(events: pd.DataFrame, rank: int | None) -> pd.DataFrame:
    """Rows of one rank, or all rows when `rank` is None."""
    if rank is None:
        return events
    return events[events["rank"].to_numpy() == rank]


def by_rank(events: pd.DataFrame) -> Iterator[tuple[int, pd.DataFrame]]:
    """(rank, its rows) for each rank, ascending; each the rows ``for_rank`` gives, in the same
    order. The loader's table is sorted by (rank, ts): one pass checks that and each rank is
    then a slice between two boundaries, so N ranks cost one pass, not N full-table masks (an
    unsorted table is stably sorted by rank once)."""
    if events.empty:
        return
    ranks = events["rank"].to_numpy()
    if len(ranks) > 1 and not bool((ranks[1:] >= ranks[:-1]).all()):
        order = np.argsort(ranks, kind="stable")
        events, ranks = events.iloc[order], ranks[order]
    cuts = [0, *(np.flatnonzero(ranks[1:] != ranks[:-1]) + 1).tolist(), len(ranks)]
    for start, end in zip(cuts[:-1], cuts[1:], strict=True):
        yield int(ranks[start]), events.iloc[start:end]


def ranks_of(events: pd.DataFrame) -> list[int]:
    """The distinct ranks present, ascending."""
    if events.empty:
        return []
    return sorted(int(r) for r in pd.unique(events["rank"]))


def gpu_work(events: pd.DataFrame) -> pd.DataFrame:
    """Kernel / memcpy / memset rows (never GPU annotation spans)."""
    return events[events["is_gpu_work"].to_numpy(dtype=bool)]


def cpu_mask(events: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the CPU-lane rows."""
    return isin_mask(events["lane"], ("cpu",))


def steps_gpu_busy_pct(events: pd.DataFrame, n_steps: int, step_us: float) -> float:
    """The share of `n_steps` profiled steps of `step_us` each that GPU work covers, in %
    (the union of the steps' GPU items over the steps' total time)."""
    busy = events["is_gpu_work"].to_numpy(dtype=bool) & (events["step"] >= 0).to_numpy()
    return 100.0 * union_length(events["ts_us"].to_numpy(float)[busy],
                                events["end_us"].to_numpy(float)[busy]) / (n_steps * step_us)


def cpu_work_mask(events: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the CPU-lane rows that are the program's work (the profiler's own
    whole-trace span excluded)."""
    return np.asarray(cpu_mask(events) & ~isin_mask(events["cat"], NOT_CPU_WORK_CATS))


def factorized(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, use_na_sentinel=False)`` (codes, uniques as an object array).

    The analyses of one summary ask about the same string columns (name, cat, lane) a dozen
    times. A categorical column without NA (what the loader builds) answers with its own
    codes and categories (which may include values no row has). Factorizing a 1M-row
    Arrow-backed ``str`` column costs ~15 ms; such columns are immutable, so their
    factorization is kept in a small LRU, keyed by the Arrow data itself (a weak reference,
    checked on every hit, so a reused id never matches and a dropped table is not kept
    alive); a column assigned anew or set in place has new Arrow data. Other columns (object
    dtype: mutable) are factorized every time. The cached arrays are read-only."""
    own = own_codes(values)
    if own is not None:
        return own[0].astype(np.intp), own[1]
    data = getattr(values.array, "_pa_array", None)
    if data is None:
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        return codes, np.asarray(uniques, dtype=object)
    key = id(data)
    with _FACTORIZED_LOCK:
        hit = _FACTORIZED.get(key)
        if hit is not None and hit[0]() is data:
            _FACTORIZED.move_to_end(key)
            return hit[1], hit[2]
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    out = np.asarray(uniques, dtype=object)
    codes.flags.writeable = False
    out.flags.writeable = False
    with _FACTORIZED_LOCK:
        for dead in [k for k, v in _FACTORIZED.items() if v[0]() is None]:
            del _FACTORIZED[dead]
        _FACTORIZED[key] = (weakref.ref(data), codes, out)
        while len(_FACTORIZED) > _FACTORIZED_MAX:
            _FACTORIZED.popitem(last=False)
    return codes, out


def _lookup_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``factorized(values)`` for a caller that only tests the codes (``codes.mask_of``): a
    categorical's codes as they are, not copied into intp."""
    own = own_codes(values)
    return own if own is not None else factorized(values)


def text_of(values: pd.Series) -> np.ndarray:
    """``values.astype(str).to_numpy()``: an object array of text, each distinct value
    converted once (a loader's text column is categorical: its codes index the texts)."""
    if len(values) == 0:
        return np.zeros(0, dtype=object)
    codes, uniques = factorized(values)
    texts = np.empty(len(uniques), dtype=object)
    texts[:] = [str(u) for u in uniques]
    return np.asarray(texts[codes])


def texts_or_blank(values: pd.Series) -> list[str]:
    """``values.astype(object).fillna("").astype(str).tolist()``, each distinct value
    converted once."""
    if len(values) == 0:
        return []
    codes, uniques = factorized(values)
    texts = np.empty(len(uniques), dtype=object)
    texts[:] = ["" if pd.isna(u) else str(u) for u in uniques]
    return list(texts[codes].tolist())


def first_seen(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes, first, uniques) of an integer array: codes numbered in order of first
    appearance (a hash, no sort), ``first`` the position of each code's first row."""
    dense = first_seen_dense(values)
    if dense is not None:
        return dense
    codes, uniques = pd.factorize(values)
    codes = np.asarray(codes, dtype=np.intp)
    before = np.maximum.accumulate(np.concatenate([[-1], codes[:-1]])) if len(codes) \
        else codes
    return codes, np.flatnonzero(codes > before), np.asarray(uniques)


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of an integer array with few distinct values (steps, depths):
    found by a hash, then only they are sorted, not every row."""
    return np.sort(pd.unique(np.asarray(values)))


def sorted_union(parts: list[np.ndarray]) -> np.ndarray:
    """``np.unique(np.concatenate(parts))`` of float arrays, most of them sorted already: a
    stable sort (a merge of sorted runs) and the repeats dropped. A zero (whose sign
    ``np.unique`` keeps from whichever copy its sort puts first) goes to ``np.unique``."""
    values = np.concatenate(parts)
    if not len(values) or bool((values == 0).any()):
        return np.unique(values)
    values.sort(kind="stable")
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    nan = np.isnan(values)
    keep[1:] &= ~(nan[1:] & nan[:-1])  # NaNs are one value (``equal_nan``), sorted last
    return values[keep]


def isin_mask(values: pd.Series, wanted: Iterable[str]) -> np.ndarray:
    """``values.isin(wanted)`` as a boolean array, tested once per distinct value."""
    if len(values) == 0:
        return np.zeros(0, dtype=bool)
    codes, uniques = _lookup_codes(values)
    want = frozenset(wanted)
    hits = np.fromiter((u in want for u in uniques), bool, len(uniques))
    return mask_of(hits, codes)


def name_matches(names: pd.Series, pattern: re.Pattern[str]) -> np.ndarray:
    """Boolean mask of `names` that `pattern` finds (tested once per distinct name)."""
    if len(names) == 0:
        return np.zeros(0, dtype=bool)
    codes, uniques = _lookup_codes(names)
    hits = np.fromiter((bool(pattern.search(str(u))) for u in uniques), bool, len(uniques))
    return mask_of(hits, codes)


def step_rows(events: pd.DataFrame) -> pd.DataFrame:
    """The `ProfilerStep#N` spans on the CPU lane, sorted by (rank, ts_us), with `step_no`."""
    # mask first, then take the few step rows (filtering the CPU rows first would copy
    # nearly the whole table), already in (rank, ts_us) order: one take, no sort of a frame
    # (``np.lexsort`` is stable and puts NaN last, as ``sort_values(kind="stable")`` does)
    at = np.flatnonzero(cpu_mask(events) & name_matches(events["name"], STEP_NAME))
    ts = events["ts_us"].to_numpy(dtype=float)[at]
    steps = events.iloc[at[np.lexsort((ts, events["rank"].to_numpy()[at]))]]
    # assign: a new frame of the few step rows (a column set on the taken rows would warn
    # SettingWithCopyWarning under pandas 2)
    return steps.assign(step_no=[int(n.rsplit("#", 1)[1]) for n in text_of(steps["name"])])


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of [start, end) intervals as disjoint sorted intervals (overlaps merged).

    | starts | ends |  ->  | starts | ends |
    | 0, 5, 20 | 10, 12, 30 |  ->  | 0, 20 | 12, 30 |
    """
    if len(starts) == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(starts, kind="stable")
    s = np.asarray(starts, dtype=float)[order]
    e = np.asarray(ends, dtype=float)[order]
    running_end = np.maximum.accumulate(e)
    # a new block starts where the interval begins after everything before it ended
    new_block = np.empty(len(s), dtype=bool)
    new_block[0] = True
    new_block[1:] = s[1:] > running_end[:-1]
    out_s = s[new_block]
    # the largest end of each block (floored at 0, as a zero-initialised maximum.at gives)
    out_e = np.maximum(np.maximum.reduceat(e, np.flatnonzero(new_block)), 0.0)
    return out_s, out_e


def union_length(starts: np.ndarray, ends: np.ndarray, lo: float = -math.inf,
                 hi: float = math.inf) -> float:
    """Length of the union of intervals, clipped to [lo, hi]."""
    s, e = merge_intervals(np.asarray(starts, float), np.asarray(ends, float))
    s = np.clip(s, lo, hi)
    e = np.clip(e, lo, hi)
    return float(np.sum(np.maximum(e - s, 0.0)))


def gaps(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float
         ) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of the parts of [lo, hi] that no interval covers (leading gap included).

    | intervals | lo, hi |  ->  | gap starts | gap lengths |
    | [2, 4), [6, 7) | 0, 10 |  ->  | 0, 4, 7 | 2, 2, 3 |
    """
    s, e = merge_intervals(np.asarray(starts, float), np.asarray(ends, float))
    return gaps_merged(s, e, lo, hi)


def gaps_merged(s: np.ndarray, e: np.ndarray, lo: float, hi: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """`gaps` for intervals already merged by `merge_intervals` (disjoint, sorted): merge
    once, then ask about many windows. The intervals that reach into [lo, hi] are found by
    binary search (ends and starts both increase), not by a mask over all of them."""
    first = int(np.searchsorted(e, lo, side="right"))  # the first interval ending after lo
    stop = int(np.searchsorted(s, hi, side="left"))  # intervals starting before hi
    s = np.clip(s[first:max(stop, first)], lo, hi)
    e = np.clip(e[first:max(stop, first)], lo, hi)
    gap_start = np.concatenate([[lo], e])
    lengths = np.concatenate([s, [hi]]) - gap_start
    positive = lengths > 0
    return gap_start[positive], lengths[positive]


def gaps_merged_many(s: np.ndarray, e: np.ndarray, lo: np.ndarray, hi: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """`gaps_merged` of each window [lo[k], hi[k]] in turn, concatenated: the same numbers
    from the same operations, on arrays (one pass for hundreds of step windows)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    if not len(s):
        lengths = hi - lo
        return lo[lengths > 0], lengths[lengths > 0]
    first = np.searchsorted(e, lo, side="right")
    n = np.maximum(np.searchsorted(s, hi, side="left"), first) - first
    size = n + 1  # a window's gaps: before each interval reaching into it, and after them
    k = np.repeat(np.arange(len(lo)), size)
    pos = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
    a, b, j, last = lo[k], hi[k], first[k] + pos, len(s) - 1
    gap_start = np.where(pos == 0, a, np.clip(e[np.clip(j - 1, 0, last)], a, b))
    gap_end = np.where(pos == n[k], b, np.clip(s[np.clip(j, 0, last)], a, b))
    lengths = gap_end - gap_start
    positive = lengths > 0
    return gap_start[positive], lengths[positive]


class Coverage:
    """Merged intervals with prefix sums: how much of [lo, hi] they cover, in O(log n)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        self.s, self.e = merge_intervals(np.asarray(starts, float), np.asarray(ends, float))
        self.cum = np.concatenate([[0.0], np.cumsum(self.e - self.s)])
        # plain lists for one-point questions: bisect on a list beats numpy on a scalar
        self._s, self._e, self._cum = self.s.tolist(), self.e.tolist(), self.cum.tolist()

    def _upto(self, x: float) -> float:
        """Covered length in (-inf, x]."""
        i = bisect.bisect_right(self._s, x)  # intervals starting at or before x
        if i == 0:
            return 0.0
        return float(self._cum[i - 1] + min(x, self._e[i - 1]) - self._s[i - 1])

    def covered(self, lo: float, hi: float) -> float:
        """Covered length in [lo, hi]: `_upto(hi) - _upto(lo)`, floored at 0 (written out:
        the replay asks it once per call and change, tens of thousands of times)."""
        if not hi > lo:
            return 0.0
        starts, ends, cum = self._s, self._e, self._cum
        i = bisect.bisect_right(starts, hi)
        upto_hi = 0.0 if i == 0 else float(cum[i - 1] + min(hi, ends[i - 1]) - starts[i - 1])
        i = bisect.bisect_right(starts, lo)
        upto_lo = 0.0 if i == 0 else float(cum[i - 1] + min(lo, ends[i - 1]) - starts[i - 1])
        return max(upto_hi - upto_lo, 0.0)

    def covered_many(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """`covered` of each (lo, hi) pair at once: the same numbers, the same operations in
        the same order, on arrays."""
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        if not len(self.s):
            return np.zeros(len(lo))
        return np.where(hi > lo, np.maximum(self._upto_many(hi) - self._upto_many(lo), 0.0),
                        0.0)

    def _upto_many(self, x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.s, x, "right")  # intervals starting at or before x
        k = np.where(i > 0, i - 1, 0)
        return np.where(i > 0, self.cum[k] + np.minimum(x, self.e[k]) - self.s[k], 0.0)

    def span_at(self, x: float) -> int:
        """Index of the merged interval [start, end) holding `x`; -1 when none does."""
        i = bisect.bisect_right(self._s, x) - 1
        return i if i >= 0 and x < self._e[i] else -1

    def spans_at(self, xs: np.ndarray) -> np.ndarray:
        """`span_at` of each of `xs`, as an int array."""
        k = np.searchsorted(self.s, xs, "right") - 1
        return np.where((k >= 0) & (xs < self.e[np.clip(k, 0, None)]), k, -1)


def quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile (linear), NaN for no values."""
    if len(values) == 0:
        return math.nan
    return float(np.quantile(np.asarray(values, float), q))


def median(values: Iterable[float]) -> float:
    """The median of `values` (NaN for none); an array or a numeric Series is read as it
    is, not element by element."""
    dtype = getattr(values, "dtype", None)
    if isinstance(values, np.ndarray | pd.Series) and isinstance(dtype, np.dtype) and \
            dtype.kind in "fiub":
        arr = np.asarray(values, float)
    else:
        arr = np.asarray(list(values), float)
    return float(np.median(arr)) if len(arr) else math.nan


def finite_or_none(value: float | None) -> float | None:
    """`value` unless it is None, NaN or infinite (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)
