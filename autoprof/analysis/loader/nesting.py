"""Parent/depth of intervals on one timeline, and self time from direct children.

Rows arrive sorted by (group, ts, -dur) where a group is one (pid, tid). A row's parent is
the nearest earlier row of its group still open when it starts: ``end_parent > ts + EPS_US``.
Kineto writes microseconds with 3 decimals (ns), and ts and dur are rounded separately, so a
child can seem to end up to ~1 ns after its parent or a sibling to start ~1 ns before the
previous one ends; ``EPS_US`` (2 ns) absorbs that. A child that really crosses its parent's
end is still its child (the profiler's own stack says so), but only the overlapping part is
subtracted, so self time stays in [0, dur].
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from autoprof.analysis.loader.vocabulary import EPS_US

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def nest(
    new_group: npt.NDArray[np.bool_], ts_us: FloatArray, end_us: FloatArray
) -> tuple[IntArray, IntArray]:
    """(parent, depth) per row; parent is -1 for a root. Rows must be sorted as above.

    Vectorized: the parent of row i is the nearest j < i of its group with
    ``end[j] > ts[i] + EPS_US`` (what a stack walk finds). A table of running maxima of
    ``end`` over windows of 4**k rows lets every row skip, from high k to low, the windows
    whose rows all ended before it started: a few numpy passes a level instead of a Python
    loop. The row-long temporaries are freed before the search, whose levels are the
    load's largest transient allocation.
    """
    n = len(ts_us)
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    prev = np.arange(-1, n - 1, dtype=np.int64)  # row i - 1
    group_start = np.maximum.accumulate(np.where(new_group, prev + 1, 0))
    parent = np.full(n, -1, dtype=np.int64)
    # common case first: the previous row is still open (a first child)
    has_prev = prev >= group_start
    direct = has_prev.copy()
    direct[has_prev] = end_us[prev[has_prev]] > ts_us[has_prev] + EPS_US
    parent[direct] = prev[direct]
    todo = np.flatnonzero(has_prev & ~direct)
    del has_prev
    if len(todo):
        candidates = prev[direct]  # ascending: prev is i - 1
        del prev, direct  # the search's levels are the load's peak: hold no row-long temporaries
        floor_rows = group_start[todo]
        del group_start
        parent[todo] = _search(todo, candidates, floor_rows, ts_us[todo] + EPS_US, end_us)
    return parent, _depth(parent)


_BASE = 4  # a level's windows are _BASE times its lower level's: half the levels of base 2


def _search(
    rows: IntArray, candidates: IntArray, group_start: IntArray, limit: FloatArray,
    end_us: FloatArray,
) -> IntArray:
    """Nearest candidate j < row (same group: at or after its ``group_start``) with
    end_us[j] > limit[row], or -1.

    Only rows that have a child can be a parent, and a row has a child exactly when the
    next row starts inside it, so ``candidates`` (those rows) is all we search. Over their
    ends, ``levels[k][i]`` is the max over candidates (i - 4**k, i]; each query walks the
    levels from widest to narrowest, skipping up to three windows a level whose rows all
    ended before it started (the skip's length, written in base 4, digit by digit):
    log4(len(candidates)) levels in memory (a level is 8 bytes a candidate), not log2.
    """
    out = np.full(len(rows), -1, dtype=np.int64)
    if not len(candidates):
        return out
    ends = end_us[candidates]
    levels = [ends]
    while _BASE ** len(levels) <= len(ends):
        width = _BASE ** (len(levels) - 1)
        level = levels[-1].copy()  # max over (i - 2 * width, i]
        np.maximum(levels[-1][width:], levels[-1][:-width], out=level[width:])
        wider = level.copy()  # max over (i - 4 * width, i]
        np.maximum(level[2 * width:], level[:-2 * width], out=wider[2 * width:])
        del level
        levels.append(wider)
    pos = np.searchsorted(candidates, rows) - 1  # last candidate before the row
    floor = np.searchsorted(candidates, group_start)  # first candidate of its group
    for k in range(len(levels) - 1, -1, -1):
        width = _BASE ** k
        idx = np.flatnonzero(pos - width + 1 >= floor)
        for _ in range(_BASE - 1):  # a row that cannot skip a window stops at this level
            if not len(idx):
                break
            idx = idx[levels[k][pos[idx]] <= limit[idx]]
            pos[idx] -= width
            idx = idx[pos[idx] - width + 1 >= floor[idx]]
    found = (pos >= floor) & (ends[np.maximum(pos, 0)] > limit)
    out[found] = candidates[pos[found]]
    return out


def _depth(parent: IntArray) -> IntArray:
    """Number of ancestors, by pointer jumping (log2(max depth) passes)."""
    # pointer jumping: depth[i] = depth[i] + depth[jump[i]], jump[i] = jump[jump[i]]
    depth = (parent >= 0).astype(np.int64)
    jump = parent.copy()
    active = np.flatnonzero(jump >= 0)
    while len(active):
        up = jump[active]
        new_depth = depth[active] + depth[up]
        new_jump = jump[up]
        depth[active] = new_depth
        jump[active] = new_jump
        active = active[new_jump >= 0]
    return depth


def self_time(parent: IntArray, ts_us: FloatArray, dur_us: FloatArray) -> FloatArray:
    """``dur`` minus the part of each direct child that lies inside the parent, in [0, dur].

    Computed from differences of nearby timestamps, not from ``end = ts + dur``: at ~5e12 us
    a float64 ``end`` is only good to ~1 ns, which would show up as noise in self times.
    """
    n = len(dur_us)
    has_parent = parent >= 0
    if not has_parent.any():
        return dur_us.copy()
    kids = np.flatnonzero(has_parent)
    mom = parent[kids]
    covered = np.minimum(dur_us[kids], (ts_us[mom] - ts_us[kids]) + dur_us[mom])
    np.clip(covered, 0.0, None, out=covered)
    children_us = np.bincount(mom, weights=covered, minlength=n)
    return np.clip(dur_us - children_us, 0.0, dur_us)
