"""The timing harness: median and quartiles, batching of fast calls, relative order."""

from __future__ import annotations

import time

import pytest

from autoprof.record.whatif.harness import MIN_SAMPLE_US, measure


def test_quartiles_bracket_the_median_and_fast_calls_are_batched():
    t = measure(lambda: sum(range(10)), "cpu", samples=5, warmup=1)
    assert len(t.samples_us) == 5
    assert t.p25_us <= t.median_us <= t.p75_us
    assert min(t.samples_us) <= t.median_us <= max(t.samples_us)
    assert t.calls_per_sample > 1  # a sub-microsecond call is never timed alone
    assert t.clock == "perf-counter" and t.spread_us >= 0


def test_a_slower_function_measures_slower():
    slow = measure(lambda: time.sleep(0.004), "cpu", samples=3, warmup=0)
    fast = measure(lambda: time.sleep(0.0005), "cpu", samples=3, warmup=0)
    assert slow.median_us >= 4000 and fast.median_us >= 500
    assert slow.median_us > 2 * fast.median_us
    assert fast.calls_per_sample >= 2  # batched up towards MIN_SAMPLE_US per sample
    assert fast.calls_per_sample * 500 <= 2 * MIN_SAMPLE_US


def test_interleaved_callables_get_their_own_timing_and_batching():
    from autoprof.record.whatif.harness import measure_interleaved

    order = []
    slow, fast = measure_interleaved(
        [lambda: (order.append("a"), time.sleep(0.002)), lambda: order.append("b")],
        "cpu", samples=4, warmup=0)
    assert slow.median_us > 10 * fast.median_us
    assert fast.calls_per_sample > slow.calls_per_sample
    # samples alternate: a-batch, b-batch, a-batch, ... after each one's probe call
    runs = [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k]
    assert runs[-8:] == ["a", "b"] * 4


def test_samples_must_be_positive():
    with pytest.raises(ValueError, match="samples must be >= 1"):
        measure(lambda: None, "cpu", samples=0)
