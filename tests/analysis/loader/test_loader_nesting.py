"""Vectorized nesting equals a plain stack walk; edge cases of equal and rounded times."""

from __future__ import annotations

import numpy as np
import pytest

from autoprof.analysis.loader.nesting import EPS_US, nest, self_time


def stack_walk(new_group, ts, end):
    """The reference: the profiler's own stack discipline, one row at a time."""
    n = len(ts)
    parent, depth, stack = [-1] * n, [0] * n, []
    for i in range(n):
        if new_group[i]:
            stack = []
        while stack and end[stack[-1]] <= ts[i] + EPS_US:
            stack.pop()
        if stack:
            parent[i], depth[i] = stack[-1], len(stack)
        stack.append(i)
    return np.array(parent), np.array(depth)


def sorted_rows(ts, dur, group):
    order = np.lexsort((np.arange(len(ts)), -dur, ts, group))
    ts, dur, group = ts[order], dur[order], group[order]
    new_group = np.r_[True, group[1:] != group[:-1]] if len(ts) else np.zeros(0, bool)
    return new_group, ts, dur


@pytest.mark.parametrize("seed", range(40))
def test_matches_stack_walk_on_random_intervals(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    ts = np.round(rng.random(n) * rng.choice([5, 50, 500]), 3)
    dur = np.round(rng.random(n) * rng.choice([0.001, 1, 20, 200]), 3)
    dur[rng.random(n) < 0.1] = 0.0
    new_group, ts, dur = sorted_rows(ts, dur, np.sort(rng.integers(0, 4, n)))
    parent, depth = nest(new_group, ts, ts + dur)
    ref_parent, ref_depth = stack_walk(new_group, ts, ts + dur)
    assert np.array_equal(parent, ref_parent)
    assert np.array_equal(depth, ref_depth)
    self_us = self_time(parent, ts, dur)
    assert (self_us >= 0).all() and (self_us <= dur).all()


@pytest.mark.parametrize("closed", [1, 3, 4, 5, 15, 16, 63, 64, 255, 256, 1000, 1023])
def test_finds_the_parent_past_many_closed_siblings(closed):
    """A row whose parent lies ``closed`` closed siblings back (each with a child, so each is
    a candidate the search must skip): skips of every length in base 4, each level's digit
    up to 3 (255 is 3333)."""
    ts, dur = [0.0], [1e6]  # the root, open to the end
    for i in range(closed):
        ts += [10.0 * i + 1.0, 10.0 * i + 2.0]
        dur += [5.0, 1.0]  # a sibling and its child, both closed before the next sibling
    ts.append(10.0 * closed + 1.0)
    dur.append(1.0)
    new_group, ts_us, dur_us = sorted_rows(np.array(ts), np.array(dur), np.zeros(len(ts), int))
    parent, depth = nest(new_group, ts_us, ts_us + dur_us)
    ref_parent, ref_depth = stack_walk(new_group, ts_us, ts_us + dur_us)
    assert parent[-1] == 0 and depth[-1] == 1
    assert np.array_equal(parent, ref_parent)
    assert np.array_equal(depth, ref_depth)


def test_equal_start_longer_first_is_the_parent():
    new_group, ts, dur = sorted_rows(np.array([10.0, 10.0]), np.array([2.0, 5.0]),
                                     np.zeros(2, int))
    parent, depth = nest(new_group, ts, ts + dur)
    assert dur[0] == 5.0 and parent.tolist() == [-1, 0] and depth.tolist() == [0, 1]


def test_sibling_starting_one_ns_before_the_previous_ends_is_a_sibling():
    """Kineto rounds ts and dur to ns separately: 100.000 + 5.000 vs next at 104.999."""
    ts = np.array([0.0, 100.0, 104.999])
    dur = np.array([200.0, 5.0, 3.0])
    parent, _ = nest(np.array([True, False, False]), ts, ts + dur)
    assert parent.tolist() == [-1, 0, 0]


def test_child_crossing_the_parent_end_only_subtracts_the_overlap():
    ts = np.array([0.0, 8.0])
    dur = np.array([10.0, 5.0])  # child ends at 13, parent at 10
    parent, _ = nest(np.array([True, False]), ts, ts + dur)
    assert parent.tolist() == [-1, 0]
    assert self_time(parent, ts, dur).tolist() == pytest.approx([8.0, 5.0])


def test_self_time_subtracts_direct_children_only():
    ts = np.array([0.0, 1.0, 2.0, 6.0])
    dur = np.array([10.0, 4.0, 1.0, 2.0])  # root > (a > b), c
    parent, depth = nest(np.array([True, False, False, False]), ts, ts + dur)
    assert parent.tolist() == [-1, 0, 1, 0] and depth.tolist() == [0, 1, 2, 1]
    assert self_time(parent, ts, dur).tolist() == pytest.approx([4.0, 3.0, 1.0, 2.0])


def test_self_time_is_exact_at_kineto_magnitudes():
    """At ~5e12 us, end = ts + dur is only good to ~1 ns; self time must not inherit that."""
    base = 5164774188520.814
    ts = np.array([base, base + 21.696])
    dur = np.array([215.425, 186.159])
    parent, _ = nest(np.array([True, False]), ts, ts + dur)
    assert self_time(parent, ts, dur)[0] == pytest.approx(29.266, abs=1e-6)


def test_groups_never_nest_across():
    ts = np.array([0.0, 1.0])
    dur = np.array([10.0, 1.0])
    parent, _ = nest(np.array([True, True]), ts, ts + dur)
    assert parent.tolist() == [-1, -1]


def test_empty():
    parent, depth = nest(np.zeros(0, bool), np.zeros(0), np.zeros(0))
    assert len(parent) == 0 and len(depth) == 0
