"""The code tables (metrics/codes.py) answer exactly what numpy's sorting unique does."""

from __future__ import annotations

import numpy as np
import pytest

from autoprof.analysis.metrics.codes import pair_codes, unique_codes


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.intp, np.uint16])
@pytest.mark.parametrize(("n", "low", "high"), [(0, 0, 1), (1, 0, 1), (7, -1, 3),
                                                (5000, -1, 400), (5000, 0, 10**6)])
def test_unique_codes_is_np_unique(dtype: type, n: int, low: int, high: int) -> None:
    if np.dtype(dtype).kind == "u":
        low = max(low, 0)
    high = min(high, int(np.iinfo(dtype).max))
    values = np.random.default_rng(n + high).integers(low, high, n).astype(dtype)
    want = np.unique(values, return_index=True, return_inverse=True)
    got = unique_codes(values)
    for expected, found in zip(want, got, strict=True):
        assert found.dtype == expected.dtype
        assert np.array_equal(found, expected.reshape(-1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_codes_are_the_sorted_distinct_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    first, second = rng.integers(-1, 4, 3000), rng.integers(-1, 600, 3000)
    keys, group = pair_codes(first, second)
    want, inverse = np.unique(np.stack([first, second], axis=1), axis=0, return_inverse=True)
    assert np.array_equal(keys, want)
    assert np.array_equal(group, inverse.reshape(-1))
    assert pair_codes(first[:0], second[:0])[0].shape == (0, 2)
