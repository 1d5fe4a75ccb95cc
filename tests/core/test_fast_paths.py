"""Pass-through paths stay minimal: checked by structure here (timings are noisy on shared
CPUs; benchmarks/ measures them)."""

from __future__ import annotations

import sys
import timeit

import torch

from autoprof import autoprof
from autoprof.record import decorator as decorator_mod


def test_finished_wrapper_calls_the_function_with_one_frame_between(traces_root):
    frames = []

    @autoprof(name="frames", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f():
        frames.append((sys._getframe(1).f_code.co_name, sys._getframe(2).f_code.co_name))

    def caller():
        f()

    for _ in range(2):
        caller()
    assert f.autoprof_session.done
    frames.clear()
    caller()
    assert frames == [("wrapper", "caller")]  # no session code on the way once done


def test_region_without_a_profiler_returns_the_shared_no_op(traces_root):
    for _ in range(2):
        with autoprof.region("quick", warmup=0, schedule=dict(wait=0, warmup=1, active=1)):
            torch.ones(1)
    assert autoprof.region("quick") is decorator_mod._NULL
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with autoprof.region("quick"):  # a profiler is on: the label is added
            torch.ones(1)
    assert "quick" in [e.key for e in prof.events()]


def test_finished_region_is_cheap(traces_root):
    """Generous bound (5 us, target 0.5 us) so a loaded CI machine does not fail it."""
    for _ in range(2):
        with autoprof.region("cheap", warmup=0, schedule=dict(wait=0, warmup=1, active=1)):
            pass
    region = autoprof.region

    def enter_exit():
        with region("cheap"):
            pass

    per_call_s = min(timeit.repeat(enter_exit, number=20000, repeat=5)) / 20000
    assert per_call_s < 5e-6, f"{per_call_s * 1e9:.0f} ns per region entry"
