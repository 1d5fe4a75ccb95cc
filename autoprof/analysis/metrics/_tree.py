"""The CPU nesting tree of an events table as positions: parents, ancestors, subtrees.

The loader's `parent` column holds row labels; these helpers turn it into positions once and
answer "which rows are above / below these rows" with one numpy pass per nesting level (never
a Python loop over rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def parent_positions(events: pd.DataFrame) -> np.ndarray:
    """Each row's parent as a position in `events` (-1: none, or not among these rows)."""
    parents = events["parent"].to_numpy()
    out = np.full(len(parents), -1, dtype=np.int64)
    index = events.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        ok = (parents >= 0) & (parents <= len(parents) - 1)  # each label is its position
        out[ok] = parents[ok].astype(np.int64, copy=False)
        return out
    labels = index.to_numpy()
    if not len(labels):
        return out
    labels = labels.astype(np.int64, copy=False)  # no copy of an int64 index
    lo, hi = int(labels.min()), int(labels.max())
    lookup = np.full(hi - lo + 1, -1, dtype=np.int64)
    lookup[labels - lo] = np.arange(len(labels))
    ok = (parents >= lo) & (parents <= hi)
    out[ok] = lookup[parents[ok].astype(np.int64, copy=False) - lo]
    return out


def ancestors(parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mask of every ancestor of the rows in the mask `rows` (the rows themselves excluded,
    unless one is an ancestor of another)."""
    out = np.zeros(len(parent), dtype=bool)
    slot = np.zeros(len(parent), dtype=np.int64)  # scratch: drops repeats without a sort
    cur = parent[rows]
    cur = cur[cur >= 0]
    while len(cur):
        cur = cur[~out[cur]]
        at = np.arange(len(cur))
        slot[cur] = at
        cur = cur[slot[cur] == at]  # one of each row
        out[cur] = True
        cur = parent[cur]
        cur = cur[cur >= 0]
    return out


def subtree(parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mask of the rows in `rows` and every row nested (at any depth) below one of them."""
    out = rows.copy()
    if not out.any():
        return out
    below = np.flatnonzero((parent >= 0) & ~out)  # rows not in yet, with a parent
    up = parent[below]
    while True:  # one nesting level a round; a row taken in is not looked at again
        hit = out[up]
        if not hit.any():
            return out
        out[below[hit]] = True
        below, up = below[~hit], up[~hit]


def has_ancestor_in(parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mask of the rows that have an ancestor in the mask `rows` (their parent is in the
    subtree of `rows`)."""
    inside = subtree(parent, rows)
    out = np.zeros(len(parent), dtype=bool)
    has_parent = parent >= 0
    out[has_parent] = inside[parent[has_parent]]
    return out
