"""`crossing` gives the halving's answer from fewer evaluations of a rising function."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from autoprof.analysis.metrics.replay.crossing import SECANT_ROUNDS, crossing


def halving(step_us: Callable[[float], float], target_us: float, highest: float,
            tolerance: float) -> tuple[float, int]:
    """The search `fit_host_scale` ran before `crossing`: every midpoint evaluated."""
    calls = 1
    if step_us(highest) <= target_us:
        return highest, calls
    lo, hi = 0.0, highest
    while hi - lo > tolerance * highest:
        mid = (lo + hi) / 2
        calls += 1
        if step_us(mid) > target_us:
            hi = mid
        else:
            lo = mid
    return max(lo, 1e-6), calls


def _steps(host_us: float, gpu_us: float, n: int, seed: int) -> Callable[[float], float]:
    """A median over steps of max(host x factor, GPU): rising, linear in pieces, kinked
    where the host stops hiding the GPU and where the median's step changes."""
    rng = np.random.default_rng(seed)
    host = host_us * rng.uniform(0.8, 1.2, n)
    gpu = gpu_us * rng.uniform(0.8, 1.2, n)
    return lambda factor: float(np.median(np.maximum(host * factor, gpu)))


CASES = [(host, gpu, target, highest, seed)
         for seed, (host, gpu) in enumerate([(100.0, 30.0), (100.0, 60.0), (50.0, 49.0)])
         for target in (35.0, 45.0, 55.0, 70.0, 99.0, 130.0)
         for highest in (1.0, 4.0)]


@pytest.mark.parametrize(("host", "gpu", "target", "highest", "seed"), CASES)
def test_same_answer_as_halving(host: float, gpu: float, target: float, highest: float,
                                seed: int) -> None:
    step_us = _steps(host, gpu, 31, seed)
    want, halving_calls = halving(step_us, target, highest, 1e-4)
    got, calls = crossing(step_us, target, highest, 1e-4)
    assert got == want
    assert calls <= halving_calls + 2 * SECANT_ROUNDS


def test_fewer_evaluations_on_a_line() -> None:
    got, calls = crossing(lambda f: 20.0 + 80.0 * f, 61.3, 1.0, 1e-4)
    want, halving_calls = halving(lambda f: 20.0 + 80.0 * f, 61.3, 1.0, 1e-4)
    assert (got, halving_calls) == (want, 15)
    assert calls <= 5


def test_highest_when_fast_enough_and_lowest_when_never() -> None:
    assert crossing(lambda f: 10.0 * f, 20.0, 1.0, 1e-4) == (1.0, 1)
    got, _ = crossing(lambda f: 50.0 + f, 20.0, 1.0, 1e-4)
    assert got == halving(lambda f: 50.0 + f, 20.0, 1.0, 1e-4)[0] == 1e-6
