"""The fast paths of the analyses answer exactly what the plain pandas forms answer."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autoprof.analysis.metrics._tree import parent_positions
from autoprof.analysis.metrics.stats import (
    Coverage,
    factorized,
    first_seen,
    gaps,
    gaps_merged,
    gaps_merged_many,
    isin_mask,
    median,
    merge_intervals,
    name_matches,
    step_rows,
)

VALUES = ["cpu", "gpu", None, "cpu", "", "Trace", "gpu", None]


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_isin_mask_is_pandas_isin(dtype: object) -> None:
    s = pd.Series(VALUES, dtype=dtype)  # type: ignore[call-overload]
    for wanted in (["cpu"], ["gpu", "Trace"], [""], []):
        assert isin_mask(s, wanted).tolist() == s.isin(wanted).to_numpy(dtype=bool).tolist()


def test_name_matches_on_arrow_and_object_columns() -> None:
    pattern = re.compile(r"^ProfilerStep#\d+$")
    names = ["ProfilerStep#1", "aten::mm", "ProfilerStep#2", None, "ProfilerStep#x"]
    expected = [True, False, True, False, False]
    for dtype in ("str", object):
        s = pd.Series(names, dtype=dtype)  # type: ignore[call-overload]
        assert name_matches(s, pattern).tolist() == expected


def test_factorized_follows_a_reassigned_column() -> None:
    df = pd.DataFrame({"lane": pd.Series(["cpu", "gpu", "cpu"], dtype="str")})
    first = isin_mask(df["lane"], ["cpu"]).tolist()
    assert first == [True, False, True]
    df["lane"] = pd.Series(["gpu", "gpu", "cpu"], dtype="str")
    assert isin_mask(df["lane"], ["cpu"]).tolist() == [False, False, True]
    df.loc[0, "lane"] = "cpu"  # in-place set: new Arrow data underneath
    assert isin_mask(df["lane"], ["cpu"]).tolist() == [True, False, True]


def test_factorized_is_read_only_and_matches_pd_factorize() -> None:
    s = pd.Series(["b", "a", None, "b"], dtype="str")
    codes, uniques = factorized(s)
    ref_codes, ref_uniques = pd.factorize(s, use_na_sentinel=False)
    assert codes.tolist() == ref_codes.tolist()
    assert [u if isinstance(u, str) else None for u in uniques] == [
        u if isinstance(u, str) else None for u in np.asarray(ref_uniques, dtype=object)]
    with pytest.raises(ValueError):
        codes[0] = 5


def test_factorized_categorical_answers_with_its_codes() -> None:
    # the loader's text columns: categorical, no NA; after a filter, unused categories stay
    full = pd.Series(["b", "a", "c", "b", "a"], dtype="category")
    s = full[full != "c"]
    codes, uniques = factorized(s)
    assert codes.dtype == np.intp  # int8 category codes would overflow in key arithmetic
    assert uniques[codes].tolist() == s.astype(str).tolist()
    assert isin_mask(s, ["b"]).tolist() == [True, False, True, False]
    assert name_matches(s, re.compile("^[ab]$")).all()
    with_na = pd.Series(["b", None, "b"], dtype="category")  # NA: pandas' own factorize
    assert isin_mask(with_na, ["b"]).tolist() == [True, False, True]


def _merge_reference(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first merge_intervals (maximum.at into zeros), kept as the reference."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    running_end = np.maximum.accumulate(e)
    new_block = np.concatenate([[True], s[1:] > running_end[:-1]])
    out_e = np.zeros(int(new_block.sum()))
    np.maximum.at(out_e, np.cumsum(new_block) - 1, e)
    return s[new_block], out_e


def _gaps_reference(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The first gaps(): a mask over every merged interval."""
    s, e = _merge_reference(starts, ends)
    keep = (e > lo) & (s < hi)
    s, e = np.clip(s[keep], lo, hi), np.clip(e[keep], lo, hi)
    gap_start = np.concatenate([[lo], e])
    lengths = np.concatenate([s, [hi]]) - gap_start
    return gap_start[lengths > 0], lengths[lengths > 0]


@pytest.mark.parametrize("seed", range(20))
def test_merge_and_gaps_equal_the_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    offset = float(rng.choice([-50.0, 0.0, 5e12]))  # negative ends too; absolute Kineto times
    starts = offset + np.round(rng.uniform(0, 1000, n), 3)
    ends = starts + np.round(rng.exponential(5, n), 3) * (rng.uniform(size=n) > 0.1)
    s, e = merge_intervals(starts, ends)
    ref_s, ref_e = _merge_reference(starts, ends)
    assert s.tolist() == ref_s.tolist() and e.tolist() == ref_e.tolist()
    for _ in range(20):
        lo, hi = np.sort(offset + rng.uniform(-100, 1100, 2))
        got = gaps_merged(s, e, float(lo), float(hi))
        want = _gaps_reference(starts, ends, float(lo), float(hi))
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        assert [a.tolist() for a in gaps(starts, ends, float(lo), float(hi))] == [
            a.tolist() for a in want]


@pytest.mark.parametrize("seed", range(20))
def test_gaps_of_many_windows_at_once_are_each_windows_in_turn(seed: int) -> None:
    """gaps_merged_many over disjoint sorted windows (step windows, merged) gives every
    window's gaps_merged, concatenated in order: the same values to the last bit."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 200))
    offset = float(rng.choice([-50.0, 0.0, 5e12]))
    starts = offset + np.round(rng.uniform(0, 1000, n), 3)
    ends = starts + np.round(rng.exponential(5, n), 3) * (rng.uniform(size=n) > 0.1)
    s, e = merge_intervals(starts, ends)
    cuts = offset + np.round(rng.uniform(-100, 1100, 2 * int(rng.integers(0, 30))), 3)
    lo, hi = merge_intervals(np.sort(cuts)[0::2], np.sort(cuts)[1::2])
    got = gaps_merged_many(s, e, lo, hi)
    parts = [gaps_merged(s, e, a, b) for a, b in zip(lo, hi, strict=True)]
    want = [np.concatenate([p[i] for p in parts]) if parts else np.empty(0) for i in (0, 1)]
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@pytest.mark.parametrize("seed", range(10))
def test_the_span_holding_a_time_one_or_many_at_once(seed: int) -> None:
    """Coverage.span_at (one time) and spans_at (an array) name the merged interval
    [start, end) holding each time, -1 in a gap, past the ends or for NaN: the rule a
    linear scan gives."""
    rng = np.random.default_rng(seed)
    starts = 5e12 + np.round(rng.uniform(0, 1000, 40), 3)
    spans = Coverage(starts, starts + np.round(rng.exponential(10, 40), 3))
    xs = np.concatenate([spans.s, spans.e, 5e12 + rng.uniform(-50, 1100, 200), [np.nan]])
    want = [next((k for k, (a, b) in enumerate(zip(spans.s, spans.e, strict=True))
                  if a <= x < b), -1) for x in xs.tolist()]
    assert [spans.span_at(x) for x in xs.tolist()] == want
    assert spans.spans_at(xs).tolist() == want
    assert -1 in want and len(set(want)) > 2


_REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("trace", [
    "tests/data/h200/matmul_add/n64_cold/trace.json",
    "tests/data/h200/matmul_add/n4096_prewarm/trace.json",
    "traces/examples/ddp_step/20261130-081205-bdf2d2",  # two ranks, merged
])
def test_categorical_text_columns_change_no_result(trace: str) -> None:
    """The loader's categorical text columns give the summary and the ops table that the
    same table with plain ``str`` columns gives, to the last bit."""
    from autoprof.analysis import load
    from autoprof.analysis.loader.events import TEXT_COLUMNS
    from autoprof.analysis.metrics.ops import self_vs_total
    from autoprof.analysis.report.summary import summarize

    run = load(_REPO / trace)
    assert isinstance(run.events["name"].dtype, pd.CategoricalDtype)
    plain = copy.copy(run)
    plain.events = run.events.astype({c: "str" for c in TEXT_COLUMNS})
    assert summarize(plain) == summarize(run)
    assert self_vs_total(plain.events).equals(self_vs_total(run.events))


@pytest.mark.parametrize("values", [
    [3.5, np.nan, 1.0, 2.0], [5, 1, 4, 2**53 + 1], [True, False, True], [], [0.1, 0.2, 0.3],
    [np.inf, 1.0, -np.inf], [None, 2.0, 1.0]])
def test_median_of_arrays_and_series_is_the_median_of_their_values(values: list[object]
                                                                   ) -> None:
    """An array or a numeric Series is read whole; the answer is the element-by-element one
    (a list of the same values: NaN for none, NaN kept)."""
    want = median(list(values))  # type: ignore[arg-type]
    for given in (np.asarray(values, dtype=float), pd.Series(values, dtype=object),
                  pd.Series(values, dtype=float)):
        got = median(given)
        assert (got == want) or (np.isnan(got) and np.isnan(want)), (given, got, want)
    if values and all(type(v) is int for v in values):
        ints = pd.Series(values, dtype=np.int64)
        assert median(ints) == median(int(v) for v in ints)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [np.int64, float])
def test_parent_positions_on_a_range_index_is_the_label_lookup(dtype: type) -> None:
    """A table indexed 0..n-1 (the loader's) reads each parent label as its position; the
    answer is the label lookup's (the same rows under an index that is not a range)."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 50):
        for _ in range(50):
            parents = rng.integers(-3, n + 3, n).astype(dtype)
            if dtype is float:
                parents[rng.integers(0, n)] = rng.choice([np.nan, n - 0.5, -0.5, 1.5])
            ranged = pd.DataFrame({"parent": parents})
            labelled = ranged.set_axis(pd.Index(np.arange(n, dtype=np.int64)))
            assert isinstance(ranged.index, pd.RangeIndex)
            assert not isinstance(labelled.index, pd.RangeIndex)
            assert parent_positions(ranged).tolist() == parent_positions(labelled).tolist()


def _step_rows_by_sort(events: pd.DataFrame) -> pd.DataFrame:
    """step_rows as a mask, a copy and a stable sort of the frame."""
    cpu = events["lane"].astype(object).eq("cpu").to_numpy(bool)
    steps = events[cpu & name_matches(events["name"], re.compile(r"^ProfilerStep#\d+$"))].copy()
    steps["step_no"] = [int(str(n).rsplit("#", 1)[1]) for n in steps["name"]]
    return steps.sort_values(["rank", "ts_us"], kind="stable")


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_step_rows_is_the_sorted_mask(dtype: object) -> None:
    # ranks out of order, equal and NaN starts (stable, NaN last), a GPU-lane step span
    # and a non-step name; labels that are not positions
    names = ["ProfilerStep#3", "aten::mm", "ProfilerStep#1", "ProfilerStep#2",
             "ProfilerStep#7", "ProfilerStep#5", "ProfilerStep#4", "ProfilerStep#6"]
    labels = [70, 10, 60, 20, 50, 30, 40, 0]
    events = pd.DataFrame({
        "name": pd.Series(names, dtype=dtype, index=labels),  # type: ignore[call-overload]
        "lane": pd.Series(["cpu", "cpu", "cpu", "cpu", "gpu", "cpu", "cpu", "cpu"],
                          dtype="category", index=labels),
        "rank": [1, 0, 0, 1, 0, 0, 1, 0],
        "ts_us": [5.0, 1.0, 9.0, 5.0, 0.0, np.nan, 2.0, 9.0],
    }, index=labels)
    found = step_rows(events)
    expected = _step_rows_by_sort(events)
    assert found.index.tolist() == expected.index.tolist() == [60, 0, 30, 40, 70, 20]
    assert found["step_no"].tolist() == expected["step_no"].tolist() == [1, 6, 5, 4, 3, 2]
    pd.testing.assert_frame_equal(found, expected)


@pytest.mark.parametrize("wanted", [[], ["v0"], ["v1", "v3"], [f"v{i}" for i in range(12)],
                                    [f"v{i}" for i in range(1, 12)],
                                    [f"v{i}" for i in range(0, 12, 2)]])
def test_isin_mask_of_a_categorical_by_few_or_many_codes_is_pandas_isin(
        wanted: list[str]) -> None:
    # few codes in (compared), few out (compared, inverted) or many of each (looked up)
    rng = np.random.default_rng(3)
    s = pd.Series(pd.Categorical([f"v{i}" for i in rng.integers(0, 12, 500)],
                                 categories=[f"v{i}" for i in range(13)]))
    assert isin_mask(s, wanted).tolist() == s.isin(wanted).to_numpy(dtype=bool).tolist()
    pattern = re.compile("^(" + "|".join(wanted) + ")$") if wanted else re.compile("^$")
    assert name_matches(s, pattern).tolist() == s.isin(wanted).to_numpy(dtype=bool).tolist()


@pytest.mark.parametrize("values", [[5, 3, 5, 0, 3, 9], [0], [7, 7, 7], [2**40, 1, 2**40],
                                    [-1, 4, -1, 2], list(range(50, 0, -1)) * 3])
def test_first_seen_is_the_hash_factorization(values: list[int]) -> None:
    # small non-negative ints by a table of their range, others by pandas' hash
    array = np.array(values, dtype=np.int64)
    codes, first, uniques = first_seen(array)
    want_codes, want_uniques = pd.factorize(array)
    assert codes.tolist() == want_codes.tolist() and codes.dtype == np.intp
    assert uniques.tolist() == want_uniques.tolist() and uniques.dtype == want_uniques.dtype
    assert first.tolist() == [values.index(u) for u in want_uniques.tolist()]


@pytest.mark.parametrize("seed", [0, 1])
def test_subtree_sums_count_each_row_in_every_row_above_it(seed: int) -> None:
    # the levels are ordered by a radix sort of 16-bit depths; each sum is the plain one
    from autoprof.analysis.metrics.ops import _subtree_sums

    rng = np.random.default_rng(seed)
    n = 3_000
    up = np.array([-1] + [int(rng.integers(-1, i)) if rng.random() < 0.9 else -1
                          for i in range(1, n)], dtype=np.int64)
    own = rng.integers(0, 100, n).astype(np.float64)
    want = own.copy()
    for row in range(n):
        above = up[row]
        while above >= 0:
            want[above] += own[row]
            above = up[above]
    assert _subtree_sums(up, own).tolist() == want.tolist()


def test_the_called_steps_are_found_once_per_analysis() -> None:
    # every check that asks gets the one table the analysis keeps, the one found afresh
    from autoprof.analysis import load
    from autoprof.analysis.analysis import Analysis
    from autoprof.analysis.diagnose.called_steps import called_steps, steps_holding_a_call

    ctx = Analysis(load(_REPO / "tests/data/h200/matmul_add/n64_cold/trace.json"))
    first = called_steps(ctx)
    assert called_steps(ctx) is first and len(first) > 0
    pd.testing.assert_frame_equal(first, steps_holding_a_call(ctx))


@pytest.mark.parametrize("seed", range(10))
def test_subtree_and_rows_below_are_the_ancestor_walk(seed: int) -> None:
    """subtree (a row in the mask or below one) and has_ancestor_in (strictly below one)
    answer what walking each row's parents up to the root answers."""
    from autoprof.analysis.metrics._tree import has_ancestor_in, subtree

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    # each row's parent an earlier row or none (-1): a forest up to ~n levels deep
    parent = np.array([int(rng.integers(-1, i)) if i and rng.uniform() > 0.1 else -1
                       for i in range(n)], dtype=np.int64)
    rows = rng.uniform(size=n) < float(rng.choice([0.0, 0.02, 0.3]))

    def above(i: int) -> list[int]:
        out = []
        while parent[i] >= 0:
            i = int(parent[i])
            out.append(i)
        return out

    want_below = [any(rows[a] for a in above(i)) for i in range(n)]
    assert has_ancestor_in(parent, rows).tolist() == want_below
    assert subtree(parent, rows).tolist() == [bool(rows[i]) or want_below[i] for i in range(n)]
