"""Timing a callable the way a fix is judged: untraced, warmed up, device-synchronised,
several samples, median and interquartile spread; CUDA events when the work is on a GPU.
The original and a fix are sampled in turn, so a load that comes and goes on the machine
weighs on both alike.

A sample is the mean of ``calls`` back-to-back calls, ``calls`` chosen so one sample lasts at
least ``MIN_SAMPLE_US``: a 5 µs function is not timed by a 5 µs clock read.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MIN_SAMPLE_US = 5_000.0
MAX_CALLS_PER_SAMPLE = 1_000
DEFAULT_SAMPLES = 15
DEFAULT_WARMUP = 3


@dataclass(frozen=True)
class Timing:
    """Per-call time of one callable: median and quartiles of ``samples_us``."""

    median_us: float
    p25_us: float
    p75_us: float
    samples_us: tuple[float, ...]
    calls_per_sample: int
    clock: str  # "cuda-events" or "perf-counter"

    @property
    def spread_us(self) -> float:
        """Interquartile range of the samples."""
        return self.p75_us - self.p25_us


def synchronize(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def timed_call(fn: Callable[[], Any], device: str) -> tuple[Any, float]:
    """``fn()``'s result and its wall time in seconds, the device drained before and after."""
    synchronize(device)
    start = time.perf_counter()
    out = fn()
    synchronize(device)
    return out, time.perf_counter() - start


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[1], q[0], q[2]


def _sample_cpu(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) * 1e6 / calls


def _sample_cuda(fn: Callable[[], Any], calls: int) -> float:
    import torch

    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    torch.cuda.synchronize()
    begin.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return float(begin.elapsed_time(end)) * 1e3 / calls


def measure(
    fn: Callable[[], Any],
    device: str,
    *,
    samples: int = DEFAULT_SAMPLES,
    warmup: int = DEFAULT_WARMUP,
) -> Timing:
    """Time ``fn()`` (a closure over its inputs) after ``warmup`` untimed calls."""
    return measure_interleaved([fn], device, samples=samples, warmup=warmup)[0]


def measure_interleaved(
    fns: Sequence[Callable[[], Any]],
    device: str,
    *,
    samples: int = DEFAULT_SAMPLES,
    warmup: int = DEFAULT_WARMUP,
) -> list[Timing]:
    """Time several callables the same way, their samples taken in turn (A B A B ...), so a
    machine that gets busier half-way slows all of them alike instead of whichever ran last."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    batches = []
    for fn in fns:
        for _ in range(warmup):
            fn()
        _, once_s = timed_call(fn, device)
        batches.append(max(1, min(MAX_CALLS_PER_SAMPLE,
                                  math.ceil(MIN_SAMPLE_US / max(once_s * 1e6, 1e-3)))))
    sample = _sample_cuda if device == "cuda" else _sample_cpu
    values: list[list[float]] = [[] for _ in fns]
    for _ in range(samples):
        for i, fn in enumerate(fns):
            values[i].append(sample(fn, batches[i]))
    synchronize(device)
    clock = "cuda-events" if device == "cuda" else "perf-counter"
    out = []
    for vals, calls in zip(values, batches, strict=True):
        median, p25, p75 = _quartiles(vals)
        out.append(Timing(median, p25, p75, tuple(vals), calls, clock))
    return out
