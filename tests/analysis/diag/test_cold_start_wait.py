"""cold-start from the untraced calls before profiling: warm-up calls, then the profiler
steps before the first recorded one (`wait_call_ms`), against the median profiled step."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.diagbuild import FakeRun, ids, matmul_like
from support.store import committed

from autoprof.analysis import load
from autoprof.analysis.loader.manifest import read_manifest

GPU_H200 = Path(__file__).resolve().parents[2] / "data" / "gpu_h200"
RESULTS = json.loads((GPU_H200 / "validate_results.json").read_text())
EXAMPLES = Path(__file__).resolve().parents[3] / "traces" / "examples"  # the seed runs



def _manifest(warmup: int, warmup_ms: list[float], wait_ms: list[float] | None) -> dict:
    m: dict[str, Any] = {
        "options": {"warmup": warmup, "schedule": {"wait": 1, "warmup": 1, "active": 3}},
        "warmup_call_ms": warmup_ms,
    }
    if wait_ms is not None:
        m["wait_call_ms"] = wait_ms
    return m


def test_fires_for_warmup_0_with_a_slow_first_wait_call():
    # steps: 100 us CPU span each, like the 64x64 seed; the wait call pays a 123 ms cold start
    run = FakeRun(matmul_like().frame(), _manifest(0, [], [123.5]))
    d = ids(run)["cold-start"]
    assert d.severity == "info"  # the recorded steps themselves are clean
    ev = d.evidence
    assert ev["first_untraced_call_ms"] == pytest.approx(123.5)
    assert ev["profiled_step_median_us"] == pytest.approx(100.0)
    assert ev["untraced_step_ratio"] == pytest.approx(1235.0)
    assert ev["wait_calls"] == 1 and ev["untraced_calls"] == 1 and ev["warmup_off"] is True
    assert "123.500 ms" in d.message and "1235.0x the median profiled step" in d.message
    assert "warmup>=1" in d.hint and "default is 3" in d.hint


def test_silent_when_all_calls_are_similar():
    run = FakeRun(matmul_like().frame(), _manifest(0, [], [0.12, 0.11]))
    found = ids(run)
    assert "cold-start" not in found
    run = FakeRun(matmul_like().frame(), _manifest(3, [0.15, 0.1, 0.09], [0.1]))
    assert "cold-start" not in ids(run)


def test_warmup_on_says_warmup_kept_it_out():
    run = FakeRun(matmul_like().frame(), _manifest(3, [120.0, 0.1, 0.09], [0.1]))
    d = ids(run)["cold-start"]
    assert d.severity == "info"
    assert "first warm-up call took 120.000 ms" in d.message
    assert "the median of the other warm-up calls" in d.message
    assert "the median profiled step" in d.message
    assert d.evidence["untraced_calls"] == 4 and d.evidence["wait_calls"] == 1
    assert d.evidence["warmup_off"] is False
    assert "Warm-up already kept" in d.hint


def test_warmup_calls_come_first_in_call_order():
    """A slow wait call after fast warm-up calls is not the cold start."""
    run = FakeRun(matmul_like().frame(), _manifest(2, [0.1, 0.1], [50.0]))
    assert "cold-start" not in ids(run)


def test_warmup_off_and_slow_first_step_is_a_warning_with_the_warmup_hint():
    run = FakeRun(matmul_like(first_step_us=300.0).frame(), _manifest(0, [], [0.1]))
    d = ids(run)["cold-start"]
    assert d.severity == "warning"
    assert d.hint.startswith("Set warmup>=1")


def test_synced_call_is_compared_with_the_steps_gpu_window_not_only_cpu():
    """A call timed up to a device sync includes its GPU work: on compute-bound steps (400 us
    kernels, 100 us CPU spans) a 0.45 ms untraced call is normal, not a cold start."""
    trace = matmul_like(cpu_step_us=100.0, kernel_us=400.0, launch_us=8.0)
    d = ids(FakeRun(trace.frame(), _manifest(0, [], [0.45])))
    assert "cold-start" not in d


def test_old_manifest_without_wait_call_ms_reads_as_empty(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"schema_version": 1, "name": "old", "warmup_call_ms": [1.0]}))
    assert read_manifest(path)["wait_call_ms"] == []
    run = FakeRun(matmul_like().frame(), {"options": {"warmup": 0}, "warmup_call_ms": []})
    assert "cold-start" not in ids(run)  # nothing untraced, clean steps


def _seed_dir(size: int, warm: bool) -> Path:
    (entry,) = [s for s in RESULTS["seed"] if s["size"] == size and s["warmup"] == warm]
    parts = Path(entry["path"]).parts
    return EXAMPLES / parts[-2] / parts[-1]


# 64: the first profiled step is slow as well (488 us vs 222 us median: 2.2x) -> warning;
# 4096: only the warm-up calls show it (first step 1.3x) -> info
@pytest.mark.parametrize(("size", "severity"), [(64, "warning"), (4096, "info")])
def test_h200_runs_recorded_before_wait_timing_still_analyse(size, severity):
    warm = committed.run(_seed_dir(size, True))
    assert warm.manifest["wait_call_ms"] == []  # recorded before the key existed
    d = ids(warm)["cold-start"]
    assert d.severity == severity
    # the first warm-up call (~124 ms: CUDA context, cuBLAS) against ~0.3 ms profiled steps
    assert "first warm-up call took" in d.message
    assert d.evidence["untraced_step_ratio"] > 100 and d.evidence["warmup_off"] is False
    assert ("Warm-up already kept" in d.hint) == (severity == "info")
    cold = committed.run(_seed_dir(size, False))
    assert cold.manifest["wait_call_ms"] == [] and cold.manifest["warmup_call_ms"] == []
    assert "cold-start" not in ids(cold)  # the 123 ms call fell in the untimed wait step


def test_h200_no_warmup_run_with_its_wait_call_timed(tmp_path):
    """What the --no-warmup H200 run reports once its wait call is timed: the run folder as
    recorded, plus the first call's time measured in the warm-up run of the same experiment
    (124 ms; not measured in this run, which predates wait timing)."""
    first_call_ms = committed.run(_seed_dir(64, True)).manifest["warmup_call_ms"][0]
    folder = tmp_path / "run"
    shutil.copytree(_seed_dir(64, False), folder)
    manifest_path = folder / "manifest.json"
    data = json.loads(manifest_path.read_text())
    assert data["options"]["warmup"] == 0 and "wait_call_ms" not in data
    data["wait_call_ms"] = [first_call_ms]
    manifest_path.write_text(json.dumps(data))
    d = ids(load(folder))["cold-start"]
    assert d.evidence["wait_calls"] == 1 and d.evidence["warmup_off"] is True
    assert d.evidence["untraced_step_ratio"] > 100
    assert "warmup>=1" in d.hint
