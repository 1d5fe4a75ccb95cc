"""Calls before the profiler first records (``skip_first`` and the first ``wait`` steps) are
timed like warm-up calls and kept in the manifest as ``wait_call_ms``."""

from __future__ import annotations

import time

import pytest
import torch

from autoprof import autoprof
from tests.core.conftest import manifest, only_run

SLOW_FIRST_S = 0.03


def _slow_first_call():
    """A function whose first call sleeps SLOW_FIRST_S (a stand-in for a cold start)."""
    calls = []

    def work(x):
        if not calls:
            time.sleep(SLOW_FIRST_S)
        calls.append(1)
        return x + 1

    return work


def test_wait_and_skip_first_calls_are_timed_when_warmup_is_off(traces_root):
    schedule = {"skip_first": 1, "wait": 2, "warmup": 1, "active": 2, "repeat": 1}
    fn = autoprof(name="nowarm", warmup=0, schedule=schedule)(_slow_first_call())
    x = torch.ones(3)
    for _ in range(6):
        assert torch.equal(fn(x), x + 1)
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "nowarm"))
    assert m["status"] == "complete" and m["steps_recorded"] == 2
    assert m["warmup_call_ms"] == []
    wait_ms = m["wait_call_ms"]
    assert len(wait_ms) == 1 + 2  # skip_first + wait: the steps before the profiler records
    assert wait_ms[0] >= SLOW_FIRST_S * 1e3  # in call order: the slow first call comes first
    assert all(0 < t < SLOW_FIRST_S * 1e3 for t in wait_ms[1:]), wait_ms


def test_no_wait_step_means_no_wait_calls(traces_root):
    fn = autoprof(name="nowait", warmup=2, schedule={"wait": 0, "warmup": 1, "active": 1})(
        _slow_first_call()
    )
    for _ in range(4):
        fn(torch.ones(2))
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "nowait"))
    assert m["status"] == "complete"
    assert m["wait_call_ms"] == []
    assert len(m["warmup_call_ms"]) == 2 and m["warmup_call_ms"][0] >= SLOW_FIRST_S * 1e3


def test_only_the_first_cycles_wait_is_timed(traces_root):
    """Later cycles' wait steps come after recording began: they are not 'before profiling'
    (and with repeat=0 the list would grow without end)."""
    schedule = {"wait": 1, "warmup": 1, "active": 1, "repeat": 3}
    fn = autoprof(name="cycles", warmup=1, schedule=schedule)(lambda x: x * 2)
    for _ in range(1 + 3 * 3):
        fn(torch.ones(2))
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "cycles"))
    assert m["status"] == "complete" and m["steps_recorded"] == 3
    assert len(m["wait_call_ms"]) == 1 and len(m["warmup_call_ms"]) == 1


def test_a_failing_wait_call_is_timed_and_reported(traces_root):
    def boom(x):
        raise ValueError("bad input")

    fn = autoprof(name="boom", warmup=0, schedule={"wait": 1, "warmup": 1, "active": 1})(boom)
    with pytest.raises(ValueError, match="bad input"):
        fn(torch.ones(2))
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "boom"))
    assert m["status"] == "failed" and m["error"]["phase"] == "wait"
    assert len(m["wait_call_ms"]) == 1 and m["wait_call_ms"][0] > 0


def test_region_wait_steps_are_timed(traces_root):
    import autoprof as ap

    schedule = {"wait": 2, "warmup": 1, "active": 1}
    for i in range(4):
        with ap.region("phase", warmup=0, schedule=schedule):
            if i == 0:
                time.sleep(SLOW_FIRST_S)
            torch.ones(2).sum()
    ap.flush()
    m = manifest(only_run(traces_root, "phase"))
    assert m["status"] == "complete" and m["warmup_call_ms"] == []
    assert len(m["wait_call_ms"]) == 2 and m["wait_call_ms"][0] >= SLOW_FIRST_S * 1e3


def test_cold_start_fires_end_to_end_when_warmup_is_off():
    """A slow first call with warmup=0 lands in the schedule's wait step: timed, then reported
    by the analysis' cold-start diagnostic with the 'set warmup>=1' hint."""
    import autoprof as ap

    fn = autoprof(name="e2e", warmup=0, schedule={"wait": 1, "warmup": 1, "active": 3})(
        _slow_first_call()
    )
    run = ap.check(fn, torch.ones(8))
    assert run.manifest["warmup_call_ms"] == [] and len(run.manifest["wait_call_ms"]) == 1
    (cold,) = [d for d in run.diagnostics() if d.id == "cold-start"]
    assert cold.evidence["wait_calls"] == 1 and cold.evidence["warmup_off"] is True
    assert cold.evidence["first_untraced_call_ms"] >= SLOW_FIRST_S * 1e3
    assert "warmup>=1" in cold.hint


def test_skip_first_wait_is_torchs_own_phases(traces_root):
    """With ``skip_first_wait=1`` torch skips the first cycle's wait: only the skip_first step
    is untimed-by-the-profiler, and one full schedule is ``wait`` calls shorter."""
    schedule = {"skip_first": 1, "wait": 2, "warmup": 1, "active": 2, "skip_first_wait": 1}
    fn = autoprof(name="nowait", warmup_calls=0, schedule=schedule)(lambda x: x + 1)
    session = fn.autoprof_session
    assert session.options.schedule.total_steps == 4  # skip_first + warmup + active
    for _ in range(4):
        fn(torch.ones(1))
    assert session.done  # the schedule ended with torch's, not two calls later
    session.flush()
    m = manifest(only_run(traces_root, "nowait"))
    assert m["status"] == "complete" and m["steps_recorded"] == 2
    assert len(m["wait_call_ms"]) == 1  # the skip_first step only


def test_the_time_between_warm_up_calls_is_the_callers_loop(traces_root):
    """The caller's loop sleeps 20 ms between calls: each of the gaps between the 4 warm-up
    calls holds it (from one call's end to the next one's start), and the calls do not."""
    fn = autoprof(name="between", warmup=4, schedule={"wait": 1, "warmup": 1, "active": 1})(
        lambda x: x + 1)
    loop_s = 0.02
    for _ in range(7):
        fn(torch.ones(2))
        time.sleep(loop_s)
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "between"))
    assert len(m["warmup_between_ms"]) == 3  # between the 4 warm-up calls, not after the last
    assert all(loop_s * 1e3 <= t < 10 * loop_s * 1e3 for t in m["warmup_between_ms"])
    assert all(t < loop_s * 1e3 for t in m["warmup_call_ms"])
    assert m["idle_sync_ms"] == []  # no CUDA in this process: no sync to time
