"""work_totals: every step's GPU work totals at once, the same numbers (bit for bit) as asking
each (rank, step) group on its own."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from autoprof.analysis.metrics.stats import union_length
from autoprof.analysis.metrics.step_work import work_totals


def _group_by_group(work: pd.DataFrame) -> dict[tuple[int, int], tuple[float, float, float, int]]:
    """Each group's rows in table order: np.sum, union_length, np.max, len."""
    out = {}
    for (rank, step), g in work.groupby(["rank", "step"], sort=True):
        s, e = g["ts_us"].to_numpy(float), g["end_us"].to_numpy(float)
        out[(int(rank), int(step))] = (float(np.sum(e - s)), union_length(s, e),
                                       float(np.max(e)), len(s))
    return out


def _work(seed: int, rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = rng.uniform(0, 1e4, rows)  # full mantissas: a sum in another order differs
    ts[rng.random(rows) < 0.1] = ts[0]  # equal starts: the stable order matters
    dur = rng.exponential(30.0, rows) * rng.integers(0, 2, rows)  # zero lengths too
    return pd.DataFrame({
        "rank": rng.integers(0, 3, rows),
        "step": rng.choice([-1, 0, 1, 2, 3, 4, 5], rows),  # groups of 1 to hundreds
        "ts_us": ts,
        "end_us": ts + dur,
    })


def _same(a: dict[tuple[int, int], tuple[float, float, float, int]],
          b: dict[tuple[int, int], tuple[float, float, float, int]]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        for x, y in zip(a[key], b[key], strict=True):
            same = x == y and math.copysign(1, x) == math.copysign(1, y)
            assert same or (math.isnan(x) and math.isnan(y)), (key, a[key], b[key])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rows", [1, 7, 40, 3000])
def test_work_totals_match_group_by_group(seed: int, rows: int) -> None:
    work = _work(seed, rows)
    _same(work_totals(work), _group_by_group(work))


def test_overlapping_intervals_merge_within_their_own_group_only() -> None:
    work = pd.DataFrame({"rank": [0, 0, 0, 1, 1], "step": [2, 2, 3, 2, 2],
                         "ts_us": [0.0, 5.0, 6.0, 1.0, 4.0],
                         "end_us": [10.0, 8.0, 20.0, 3.0, 6.0]})
    totals = work_totals(work)
    assert totals == {(0, 2): (13.0, 10.0, 10.0, 2), (0, 3): (14.0, 14.0, 20.0, 1),
                      (1, 2): (4.0, 4.0, 6.0, 2)}


def test_a_nan_end_is_read_as_union_length_reads_it() -> None:
    work = _work(1, 50)
    work.loc[work.index[3], "end_us"] = np.nan
    _same(work_totals(work), _group_by_group(work))


def test_no_work() -> None:
    assert work_totals(_work(0, 5).iloc[:0]) == {}
