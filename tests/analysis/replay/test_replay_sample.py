"""A long trace replayed over a sample of its steps (metrics/replay/sample.py): blocks of
consecutive steps, each after a lead-in step, report what the whole trace's replay reports
for the same steps."""

from __future__ import annotations

import numpy as np
import pytest
from support.attrbuild import Trace

from autoprof.analysis.metrics.replay import RemoveSync, ScaleHost, predict_speedups, replay_steps
from autoprof.analysis.metrics.replay.graph import shared_graphs
from autoprof.analysis.metrics.replay.sample import _holds_a_span, block_starts, sampled


def gpu_tail(n_steps: int) -> Trace:
    """Steps 25 us apart (20 us of host each), each launching one kernel that runs 10-13 us
    into the next step: each step's window starts where the previous step's kernel ends, so
    a step replayed without the one before it would start earlier."""
    t = Trace()
    for k in range(n_steps):
        at = 25.0 * k
        t.step(k + 1, at, 20.0).launch(at + 12, 3, at + 17, 10.0 + k % 4)
    return t


def test_blocks_are_spread_evenly_and_short_traces_are_whole() -> None:
    assert block_starts(500, 32, 8) == [0, 164, 328, 492]
    assert block_starts(40, 16, 8) == [0, 32]
    assert block_starts(20, 32, 8) == list(range(20))
    ev = gpu_tail(12).frame()
    table, leads = sampled(ev, None, 8, 4)  # two blocks of 4 and a lead-in: 10 steps
    assert table is not ev and leads == {8}
    table, leads = sampled(ev, None, 32)
    assert table is ev and not leads


def test_a_sampled_replay_reports_the_whole_replays_steps() -> None:
    ev = gpu_tail(40).frame()
    whole = {r.step: r for r in replay_steps(ev)}
    table, leads = sampled(ev, None, 16, 8)  # two blocks of 8: steps 1-8, 33-40
    assert leads == {32}
    assert len(table) < len(ev)
    # the default: 16 single steps spread evenly, each after its lead-in
    reported = [k + 1 for k in block_starts(40, 16, 1)]
    assert reported[0] == 1 and reported[-1] == 40 and len(reported) == 16
    with shared_graphs(max_steps=16):
        part = replay_steps(ev)
        spread = predict_speedups(ev, [ScaleHost(0.5)])
    assert [r.step for r in part] == reported
    for r in part:
        assert r.step_us == pytest.approx(whole[r.step].step_us, rel=1e-12)
        assert r.measured_step_us == pytest.approx(whole[r.step].measured_step_us, rel=1e-12)
    # each step starts where the previous step's kernel ends: step 33 at 805 us, not at its
    # host start (800 us); replayed without the step before it, it would measure 27 us
    assert whole[33].measured_step_us == pytest.approx(22.0)
    full = predict_speedups(ev, [ScaleHost(0.5)])
    assert len(spread.per_step) == 16 and len(full.per_step) == 40
    assert spread.median == pytest.approx(full.median, rel=1e-9)


def test_a_rank_is_replayed_whole_unless_the_sample_replays_fewer_steps() -> None:
    # 32 single steps and their 32 lead-ins: a rank of 64 steps is replayed whole
    whole = gpu_tail(64).frame()
    assert sampled(whole, None, 32)[0] is whole
    ev = gpu_tail(65).frame()
    table, leads = sampled(ev, None, 32)
    assert len(leads) == 31 and len(table) < len(ev)
    with shared_graphs(max_steps=32):
        assert len(replay_steps(ev)) == 32


def test_a_sampled_replay_changes_nothing_under_the_cap() -> None:
    ev = gpu_tail(10).frame()
    with shared_graphs(max_steps=16):
        part = predict_speedups(ev, [RemoveSync(), ScaleHost(0.7)])
    full = predict_speedups(ev, [RemoveSync(), ScaleHost(0.7)])
    assert part == full


def test_holds_a_span_answers_the_test_of_every_span() -> None:
    """A row holds a span when it starts at or before it and ends at or after it: the
    search over the spans gives what testing each span gives, NaN starts and ends included."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        ts = rng.uniform(0, 100, 400).round(0)
        end = ts + rng.uniform(0, 60, 400).round(0)
        ts[rng.random(400) < 0.05] = np.nan
        end[rng.random(400) < 0.05] = np.nan
        lo = rng.uniform(0, 100, rng.integers(0, 8)).round(0)
        hi = lo + rng.uniform(0, 30, len(lo)).round(0)
        hi[rng.random(len(hi)) < 0.1] = np.nan
        each = np.zeros(len(ts), dtype=bool)
        for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
            each |= (ts <= a) & (end >= b)
        assert np.array_equal(_holds_a_span(ts, end, lo, hi), each)
