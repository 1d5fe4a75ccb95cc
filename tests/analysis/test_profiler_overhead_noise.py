"""The profiler's share is stated only when the untraced calls' spread supports it."""

from __future__ import annotations

from autoprof.analysis.metrics.profiler_overhead import share_interval, share_told


def test_three_scattered_untraced_calls_cannot_tell() -> None:
    steps = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    calls = [300.0, 1500.0, 700.0]  # median 700: a "30%" share from noise
    told = share_told(steps, calls)
    assert told["overhead_told"] is False and "cannot tell" in told["overhead_note"]
    iv = share_interval(steps, calls)
    assert iv is not None and iv[0] <= 1.0 <= iv[1]


def test_slower_untraced_calls_are_not_told_as_zero_percent() -> None:
    told = share_told([1000.0, 1002.0, 998.0], [1200.0, 1210.0, 1190.0])
    assert told["overhead_told"] is False


def test_a_clear_overhead_is_told_with_an_interval_holding_it() -> None:
    steps = [2000.0, 2010.0, 1990.0, 2005.0, 1995.0]
    calls = [1000.0, 1005.0, 995.0, 1002.0]
    told = share_told(steps, calls)
    assert told["overhead_told"] is True and "overhead_note" not in told
    assert told["overhead_pct_low"] <= 50.0 <= told["overhead_pct_high"]


def test_one_untraced_call_cannot_tell() -> None:
    assert share_told([1000.0, 1000.0], [500.0])["overhead_told"] is False


def test_two_untraced_calls_state_the_side_of_an_extreme_bound_not_its_digits() -> None:
    note = share_told([123.0], [66.0, 198.0])["overhead_note"]  # bounds 0.001x, 1156x
    assert "is <0.01x to >100x (95%) from 2 untraced calls" in note
    scattered = share_told([1000.0, 1010.0, 990.0, 1005.0, 995.0], [300.0, 1500.0, 700.0])
    assert "<0.01x" not in scattered["overhead_note"]  # a finite bound keeps its digits
