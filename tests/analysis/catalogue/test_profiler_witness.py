"""`profiler-slowdown` blames the profiler only when the calls after the window, timed without
it, are faster than the profiled steps too: a program that is as slow untraced after the
window (a loaded machine, threads waiting for cores) is not slowed by the profiler."""

from __future__ import annotations

from typing import Any

from support.diagbuild import FakeRun, Trace, ids


def _cpu_steps(step_us: float) -> Trace:
    t = Trace()
    for n in range(4):
        t0 = 1000.0 + n * step_us
        t.step(n, t0, step_us).cpu("aten::add", t0 + 5.0, step_us - 10.0)
    return t


def _manifest(after_ms: list[float]) -> dict[str, Any]:
    return {"options": {"warmup": 3, "schedule": {"wait": 1, "warmup": 1, "active": 3}},
            "warmup_call_ms": [0.02, 0.02, 0.02], "wait_call_ms": [0.02],
            "after_window_call_ms": after_ms}


def test_slow_untraced_calls_after_the_window_clear_the_profiler() -> None:
    # 100 us steps, 20 us warm-up calls (5x), but the calls after the window take 90 us
    d = ids(FakeRun(_cpu_steps(100.0).frame(), _manifest([0.09, 0.09, 0.1, 0.09, 0.09])))
    assert "profiler-slowdown" not in d


def test_fast_untraced_calls_after_the_window_keep_the_finding() -> None:
    d = ids(FakeRun(_cpu_steps(100.0).frame(), _manifest([0.02, 0.02, 0.02, 0.02, 0.02])))
    found = d["profiler-slowdown"]
    assert found.evidence["after_window_call_us"] is not None
    assert found.evidence["slowdown"] >= 3.0


def test_without_calls_after_the_window_the_warm_up_calls_decide() -> None:
    d = ids(FakeRun(_cpu_steps(100.0).frame(), _manifest([])))
    assert "profiler-slowdown" in d
