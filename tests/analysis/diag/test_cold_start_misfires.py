"""cold-start fires only on a one-time cost of the function, and profiler-slowdown says when
the profiler itself multiplies a step's time."""

from __future__ import annotations

import glob
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.diagbuild import FakeRun, Trace, ids, matmul_like
from support.store import committed

from autoprof.analysis import load

GPU_H200 = Path(__file__).resolve().parents[2] / "data" / "gpu_h200"


def _manifest(warmup_ms: list[float], wait_ms: list[float], **extra: Any) -> dict[str, Any]:
    return {"options": {"warmup": len(warmup_ms), "schedule": {"wait": len(wait_ms),
                                                               "warmup": 1, "active": 3}},
            "warmup_call_ms": warmup_ms, "wait_call_ms": wait_ms, **extra}


def test_untraced_calls_that_all_cost_the_same_are_not_a_one_time_cost():
    # every untraced call takes 1 ms, ten times a 100 us profiled step: nothing one-time
    run = FakeRun(matmul_like().frame(), _manifest([1.0, 1.0, 1.0], [1.0]))
    assert "cold-start" not in ids(run)


def test_a_slow_first_untraced_call_is_still_a_one_time_cost():
    run = FakeRun(matmul_like().frame(), _manifest([120.0, 1.0, 1.0], [1.0]))
    assert "one-time cost" in ids(run)["cold-start"].hint


def _with_empty_flush_step(trace: Trace, n: int, ts: float) -> Trace:
    """The span a flush closes: ``ProfilerStep#n`` with no call inside."""
    return trace.step(n, ts, 2.0)


def test_the_empty_step_a_flush_closes_is_not_in_the_median():
    # two called steps (150 us, 100 us) and the flush's 2 us step: with it, the median of
    # the later steps is 51 us and the first step looks 2.9x slower than the rest
    trace = _with_empty_flush_step(matmul_like(steps=2, first_step_us=150.0), 2, 1300.0)
    run = FakeRun(trace.frame(), _manifest([0.2, 0.2, 0.2], [0.2], status="partial"))
    assert "cold-start" not in ids(run)


def test_a_step_without_the_run_s_region_is_left_out_when_the_run_has_regions():
    trace = matmul_like(steps=2, first_step_us=150.0)
    for ts, dur in ((1000.0, 150.0), (1150.0, 100.0)):
        trace.cpu("myfn", ts + 1.0, dur - 2.0, cat="user_annotation")
    trace.step(2, 1300.0, 2.0).cpu("aten::empty", 1300.5, 1.0)  # torch's own, no call
    run = FakeRun(trace.frame(), _manifest([0.2, 0.2, 0.2], [0.2], name="myfn"))
    assert "cold-start" not in ids(run)


def test_a_real_slow_first_step_still_fires_beside_an_empty_flush_step():
    trace = _with_empty_flush_step(matmul_like(steps=3, first_step_us=400.0), 3, 1700.0)
    run = FakeRun(trace.frame(), _manifest([0.2, 0.2, 0.2], [0.2], status="partial"))
    d = ids(run)["cold-start"]
    assert d.evidence["other_steps_median_us"] == pytest.approx(100.0)
    assert d.evidence["step_ratio"] == pytest.approx(4.0)


def _loader_first_step(loader_us: float | None) -> FakeRun:
    trace = matmul_like(steps=4, first_step_us=400.0)
    if loader_us is not None:  # the new epoch's first batch: iterator and workers start
        trace.cpu("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 1001.0,
                  loader_us, cat="user_annotation")
    return FakeRun(trace.frame(), _manifest([0.2, 0.2, 0.2], [0.2]))


def test_a_data_loader_starting_an_epoch_is_not_a_cold_start():
    assert "cold-start" in ids(_loader_first_step(None))  # the same step without the loader
    found = ids(_loader_first_step(290.0))
    assert "cold-start" not in found


def _cpu_only(first_step_us: float) -> Trace:
    t = Trace()
    ts = 1000.0
    for n in range(4):
        span = first_step_us if n == 0 else 100.0
        t.step(n, ts, span).cpu("aten::add", ts + 5.0, span - 10.0)
        ts += span
    return t


def test_a_cpu_run_gets_no_cublas_hint():
    # no untraced call before the first step (on CPU an untraced call at the later steps'
    # pace shows the function was warm already)
    d = ids(FakeRun(_cpu_only(400.0).frame(), _manifest([], [])))["cold-start"]
    assert d.severity == "warning"
    assert "cuBLAS" not in d.hint and "lazy initialisation" in d.hint
    gpu = ids(FakeRun(matmul_like(first_step_us=400.0).frame(), _manifest([], [0.1])))
    assert "cuBLAS" in gpu["cold-start"].hint


def test_profiler_slowdown_fires_when_steps_are_several_times_the_untraced_calls():
    # 100 us CPU steps against 20 us untraced calls: 5x
    d = ids(FakeRun(_cpu_only(100.0).frame(), _manifest([0.02, 0.02, 0.02], [0.02])))
    found = d["profiler-slowdown"]
    assert found.severity == "warning"
    assert found.evidence["slowdown"] == pytest.approx(
        found.evidence["profiled_step_us"] / found.evidence["untraced_call_us"], rel=1e-3)
    assert found.evidence["slowdown"] >= 3.0
    assert "untraced" in found.message


def test_profiler_slowdown_silent_when_untraced_calls_match_the_steps():
    d = ids(FakeRun(_cpu_only(100.0).frame(), _manifest([0.1, 0.1, 0.1], [0.1])))
    assert "profiler-slowdown" not in d
    d = ids(FakeRun(_cpu_only(100.0).frame(), {"options": {"warmup": 0}}))
    assert "profiler-slowdown" not in d  # nothing untraced to compare with


def test_profiler_slowdown_on_a_committed_h200_run(tmp_path):
    """The 64x64 H200 seed with its untraced calls made 5x faster than its profiled steps."""
    (src,) = glob.glob(str(GPU_H200 / "seed_n64" / "*"))
    run_dir = tmp_path / "run"
    shutil.copytree(src, run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert "profiler-slowdown" not in ids(committed.run(src))
    profiled_us = committed.run(src).analysis.profiler_overhead["profiled_step_us"]
    manifest["warmup_call_ms"] = [100.0] + [profiled_us / 5e3] * 3
    manifest["wait_call_ms"] = [profiled_us / 5e3]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    found = ids(load(run_dir))["profiler-slowdown"]
    assert found.evidence["slowdown"] == pytest.approx(5.0, rel=0.01)
