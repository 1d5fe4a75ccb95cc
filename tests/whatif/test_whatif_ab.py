"""autoprof.compare: an interleaved A/B timed without the profiler, a paired ratio interval."""

from __future__ import annotations

import math
import time

import pytest

import autoprof
from autoprof.record.whatif.ab import Interval, answer, paired_ratio, settle_text


def _work(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


def base(ms: float) -> None:
    _work(ms)


def doubled(ms: float) -> None:
    _work(2 * ms)


def test_twice_the_work_is_slower_and_the_interval_holds_2x() -> None:
    res = autoprof.compare(base, doubled, 2.0, blocks=12, warmup=1)
    assert res.answer == "slower"
    # twice the busy-wait plus the same call overhead: 2x within 5%
    assert res.interval.low <= 2.0 * 1.05 and res.interval.high >= 2.0 / 1.05
    assert res.interval.low > 1.0
    text = str(res)
    assert "slower" in text and "base" in text and "doubled" in text


def test_half_the_work_is_faster() -> None:
    res = autoprof.compare(doubled, base, 2.0, blocks=10, warmup=1)
    assert res.answer == "faster"
    assert res.interval.low <= 0.5 * 1.05 and res.interval.high >= 0.5 / 1.05


def test_identical_functions_are_not_called_changed() -> None:
    res = autoprof.compare(base, base, 1.0, blocks=12, warmup=1)
    # the same work both sides: the interval holds 1, or any difference is tiny
    assert res.answer == "cannot tell" or abs(math.log(res.ratio)) < 0.05
    assert res.interval.min_detectable >= 1.0


def test_same_function_under_two_settings() -> None:
    import contextlib

    entered: list[str] = []

    @contextlib.contextmanager
    def mark(name: str):  # type: ignore[no-untyped-def]
        entered.append(name)
        yield

    res = autoprof.compare(base, None, 0.5, blocks=3, warmup=1,
                           setup_a=lambda: mark("a"), setup_b=lambda: mark("b"))
    assert {"a", "b"} <= set(entered)
    assert res.interval.pairs == 3


def test_user_exception_propagates_as_its_own() -> None:
    class Mine(Exception):
        pass

    def boom() -> None:
        raise Mine("from the user's code")

    with pytest.raises(Mine, match="from the user's code"):
        autoprof.compare(boom, boom)


def test_interval_rule_and_settle_text() -> None:
    same = paired_ratio([10.0, 11.0, 9.0, 10.5], [10.2, 10.8, 9.3, 10.4])
    assert answer(same) == "cannot tell"
    assert same.low < 1 < same.high
    assert same.min_detectable > 1
    assert settle_text(same) is not None
    clear = paired_ratio([10.0, 10.1, 9.9, 10.0], [20.0, 20.3, 19.7, 20.1])
    assert answer(clear) == "slower" and clear.low <= 2.0 <= clear.high
    assert settle_text(clear) is None
    one = paired_ratio([1.0], [2.0])
    assert answer(one) == "cannot tell" and math.isinf(one.min_detectable)
    assert isinstance(one, Interval)


def test_fewer_than_two_blocks_is_refused() -> None:
    with pytest.raises(ValueError, match="blocks"):
        autoprof.compare(base, base, 1.0, blocks=1)
