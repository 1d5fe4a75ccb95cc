"""`after-window`: the calls right after the profiling window against the steady untraced
calls, named only when the slowest is 2x the steady call and they cost 5 ms more in all."""

from __future__ import annotations

from typing import Any

import pytest
from support.diagbuild import FakeRun, ids, matmul_like


def _manifest(after_ms: list[float], **extra: Any) -> dict[str, Any]:
    return {"options": {"warmup": 3, "schedule": {"wait": 1, "warmup": 1, "active": 3}},
            "warmup_call_ms": [5.0, 0.3, 0.3], "wait_call_ms": [0.3],
            "after_window_call_ms": after_ms, **extra}


def _found(after_ms: list[float], **extra: Any) -> Any:
    return ids(FakeRun(matmul_like().frame(), _manifest(after_ms, **extra))).get("after-window")


def test_slow_calls_after_the_window_are_named_with_their_measure():
    d = _found([9.3, 0.8, 0.3, 0.3, 0.3])
    assert d is not None and d.severity == "info"
    ev = d.evidence
    assert ev["steady_call_ms"] == pytest.approx(0.3)  # the first warm-up call left out
    assert ev["slowdown"] == pytest.approx(9.3 / 0.3, rel=1e-3)
    assert ev["extra_ms"] == pytest.approx(11.0 - 5 * 0.3, rel=1e-3)
    assert ev["slowdown"] >= ev["ratio_threshold"] and ev["extra_ms"] >= ev["extra_threshold_ms"]
    assert "right after the profiling window" in d.message and "9.5 ms more" in d.message
    assert "finisher" in d.message  # why, from what the run recorded


def test_a_small_slowdown_or_a_small_cost_is_not_named():
    assert _found([0.6, 0.3, 0.3, 0.3, 0.3]) is None  # 2x, but 0.3 ms in all
    assert _found([4.0, 4.0, 4.0, 4.0, 4.0], warmup_call_ms=[5.0, 3.0, 3.0],
                  wait_call_ms=[3.0]) is None  # 5 ms more, but only 1.3x
    assert _found([]) is None  # no calls after the window recorded (older runs)


def test_threads_that_fill_every_cpu_are_named_as_the_cause():
    d = _found([9.3, 8.0, 0.3, 0.3, 0.3], intra_op_threads=2, cpus=2)
    assert d is not None
    assert "2 intra-op threads fill all 2 CPUs" in d.message
    assert "torch.set_num_threads(1)" in d.hint
    other = _found([9.3, 8.0, 0.3, 0.3, 0.3], intra_op_threads=1, cpus=2)
    assert other is not None and "intra-op" not in other.message
