"""The summary's counting shortcuts answer what their plain forms answer, on random inputs:
the breakdown's painting count and its classes as bits, the loop's outermost user rows and
the bias-add pairing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from autoprof.analysis.metrics.breakdown_paint import _open_at, _paint_each, paint
from autoprof.analysis.metrics.replay.bias import _bias_pairs_kept, is_bias_add
from autoprof.analysis.metrics.replay.loop import _outermost
from autoprof.analysis.metrics.stats import merge_intervals


@pytest.mark.parametrize("seed", range(20))
def test_open_at_counts_the_intervals_over_each_midpoint(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    starts = rng.integers(0, 50, n).astype(float)
    ends = starts + rng.integers(0, 20, n)  # empty intervals too
    points = np.unique(np.concatenate([starts, ends, rng.integers(0, 70, 5).astype(float)]))
    mid = (points[:-1] + points[1:]) / 2
    up = mid == points[1:]
    want = (np.searchsorted(np.sort(starts), mid, "right")
            - np.searchsorted(np.sort(ends), mid, "right"))
    assert _open_at(points, starts, ends, up).tolist() == want.tolist()


def test_open_at_of_no_points_is_empty() -> None:
    empty = np.zeros(0)
    assert len(_open_at(empty, empty, empty, np.zeros(0, dtype=bool))) == 0


def _classes(rng: np.random.Generator, count: int, tiny: bool
             ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`count` classes of merged intervals; `tiny`: on times whose gaps round midpoints up."""
    out = {}
    for i in range(count):
        n = int(rng.integers(0, 30))
        s = np.sort(rng.integers(0, 200, n)).astype(float)
        e = s + rng.integers(0, 15, n)
        if tiny:
            s, e = 1e9 + s * 1e-7, 1e9 + e * 1e-7
        out[f"c{i}"] = merge_intervals(s, e)
    return out


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("tiny", [False, True])
def test_classes_painted_as_bits_match_one_pass_a_class(seed: int, tiny: bool) -> None:
    rng = np.random.default_rng(seed)
    merged = _classes(rng, 9, tiny)
    table = pd.DataFrame({k: np.zeros(0) for k in ("start", "end", "call_start", "call_end")})
    codes = {k: 10 + i for i, k in enumerate(merged)}
    points, got = paint(merged, table, codes, untraced=-1)
    mid = (points[:-1] + points[1:]) / 2
    up = mid == points[1:]
    assert not tiny or up.any()  # the rounding case is exercised
    want = _paint_each(points, mid, merged, codes, -1, up, exact=True)
    assert got.tolist() == want.tolist()


def test_overlapping_intervals_take_the_per_class_path() -> None:
    merged = {"a": (np.array([0.0, 5.0]), np.array([10.0, 12.0])),  # not merged: overlap
              "b": (np.array([11.0]), np.array([20.0]))}
    table = pd.DataFrame({k: np.zeros(0) for k in ("start", "end", "call_start", "call_end")})
    points, got = paint(merged, table, {"a": 1, "b": 2}, untraced=0)
    assert points.tolist() == [0.0, 5.0, 10.0, 11.0, 12.0, 20.0]
    assert got.tolist() == [1, 1, 1, 1, 2]  # a over b where both cover, b alone after 12


def _outermost_by_mask(parent: np.ndarray, rows: np.ndarray) -> list[int]:
    keep = np.zeros(len(parent), dtype=bool)
    keep[rows] = True
    return [int(r) for r in rows if parent[r] < 0 or not keep[parent[r]]]


@pytest.mark.parametrize("seed", range(20))
def test_outermost_keeps_the_rows_whose_parent_is_not_kept(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    parent = np.array([int(rng.integers(-1, i)) if i else -1 for i in range(n)], dtype=np.int64)
    rows = np.flatnonzero(rng.random(n) < rng.random())
    got = _outermost(parent, rows)
    assert got.dtype == np.int64
    assert got.tolist() == _outermost_by_mask(parent, rows)


def test_bias_pairs_kept_decides_each_pair_by_its_shapes() -> None:
    dims = ["[[8, 4], [4, 16]]", "[[8, 16], [16]]", "[[8, 16], [1, 16]]", "[[8, 16], [8]]",
            "[[3, 4], [4, 5]]", "[[3, 5], [5]]", ""]
    events = pd.DataFrame({"input_dims": pd.Series(dims, dtype="category")})
    rng = np.random.default_rng(0)
    products = rng.integers(0, len(dims), 200)
    adds = rng.integers(0, len(dims), 200)
    want = [is_bias_add(dims[p], dims[a]) for p, a in zip(products, adds, strict=True)]
    assert any(want) and not all(want)
    assert _bias_pairs_kept(events, products, adds).tolist() == want


def test_a_loops_span_is_read_from_the_ops_arrays_as_floats() -> None:
    from autoprof.analysis.diagnose.op_loop import (
        MIN_REPEATS,
        SMALL_ELEMENTS,
        _loop_in_step,
        _Steps,
    )

    names = ["aten::unbind"] + ["aten::select", "aten::mul"] * MIN_REPEATS + ["aten::stack"]
    n = len(names)
    ts_us = np.arange(n, dtype=float) * 2.5 + 0.25
    ops = pd.DataFrame({"name": pd.Series(names, dtype="category"), "ts_us": ts_us,
                        "end_us": ts_us + 1.5, "input_dims": ["[[2]]"] * n})
    found = _loop_in_step(_Steps(ops, SMALL_ELEMENTS), np.arange(n))
    assert found is not None
    assert (found["repeats"], found["loop_ops"]) == (MIN_REPEATS, n)
    assert type(found["ts_us"]) is float and type(found["end_us"]) is float
    assert (found["ts_us"], found["end_us"]) == (ts_us[0], ts_us[-1] + 1.5)
