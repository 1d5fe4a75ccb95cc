"""Small integer codes of a table's text columns, used as they are: a categorical's own
codes, a boolean mask from a per-code answer, and the first appearances of small
non-negative ints. Helpers of ``stats`` (its ``isin_mask``, ``name_matches`` and
``first_seen`` answer exactly what they did through pandas' hashes and lookups)."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd


def own_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """A categorical column without NA (the loader's text columns): its own codes (their
    own small integer type, not copied) and categories as an object array; None otherwise.
    The Categorical's own arrays: ``.cat.codes`` would build a Series on every call."""
    if not isinstance(values.dtype, pd.CategoricalDtype):
        return None
    categorical = cast(pd.Categorical, values.array)
    codes = categorical.codes
    if len(codes) and codes.min() < 0:  # NA: the codes are no factorization
        return None
    return codes, np.asarray(categorical.categories.to_numpy(dtype=object), dtype=object)


_FEW_CODES = 4  # at most this many codes in (or out): compared, not looked up


def mask_of(hits: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``hits[codes]`` (``hits``: a boolean per code). Where only a few codes are in (or
    out), the codes are compared with each: a comparison of small integers runs about 40
    times faster than a row-long lookup (a mask of one lane or one category, the usual
    question here)."""
    on = np.flatnonzero(hits)
    if len(on) <= _FEW_CODES:
        return _equal_any(codes, on)
    off = np.flatnonzero(~hits)
    if len(off) <= _FEW_CODES:
        return ~_equal_any(codes, off)
    return np.asarray(np.take(hits, codes))


def _equal_any(codes: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    out = np.zeros(len(codes), dtype=bool)
    for code in wanted.tolist():
        out |= codes == code
    return out


def first_seen_dense(values: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``first_seen`` of non-negative integers below a few times their count (the ops
    table's group keys): each value's first row by one ``np.minimum.at`` over a table of
    the range, about 5x faster than a hash of every row; None for other values."""
    values = np.asarray(values)
    n = len(values)
    if not n or values.dtype.kind not in "iu" or int(values.min()) < 0 \
            or int(values.max()) >= 4 * n + 1024:
        return None
    first = np.full(int(values.max()) + 1, n, dtype=np.intp)
    np.minimum.at(first, values, np.arange(n, dtype=np.intp))
    present = np.flatnonzero(first < n)
    uniques = present[np.argsort(first[present], kind="stable")]
    code_of = np.empty(len(first), dtype=np.intp)
    code_of[uniques] = np.arange(len(uniques), dtype=np.intp)
    return code_of[values], first[uniques], uniques.astype(values.dtype)


def pair_codes(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (first, second) pairs of two integer columns, sorted (first major; a
    2-column array), and each row's pair by its position there: one integer per pair
    (``unique_codes``), not a sort of the pairs as rows (``np.unique(axis=0)`` takes ~50x
    longer)."""
    first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    if not len(first):
        return np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.intp)
    width = int(second.max()) - int(second.min()) + 1
    combined = (first - int(first.min())) * width + (second - int(second.min()))
    _, at, group = unique_codes(combined)
    return np.stack([first[at], second[at]], axis=1), group


def unique_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_inverse=True)`` (the distinct values
    sorted, each one's first position, each value's place among them): for integers spanning
    a few times their count (a column's codes, -1 for none) by a table over their range, no
    sort; by ``np.unique`` otherwise."""
    values = np.asarray(values)
    n = len(values)
    if not n or values.dtype.kind not in "iu" \
            or int(values.max()) - int(values.min()) >= 4 * n + 1024:
        distinct, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        return distinct, first, inverse.reshape(-1)
    low = int(values.min())
    offsets = values.astype(np.intp) - low
    table = np.full(int(offsets.max()) + 1, n, dtype=np.intp)
    np.minimum.at(table, offsets, np.arange(n, dtype=np.intp))
    present = np.flatnonzero(table < n)
    place = np.empty(len(table), dtype=np.intp)
    place[present] = np.arange(len(present), dtype=np.intp)
    return (present + low).astype(values.dtype), table[present], place[offsets]
