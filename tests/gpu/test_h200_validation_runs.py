"""Pins, without a GPU, the conclusions of the H200 validation runs (docs/gpu-validation.md).

`tests/data/gpu_h200/` holds the run folders autoprof wrote on an NVIDIA H200 through
`benchmarks/gpu/validate.py` and `benchmarks/gpu/ddp_straggler.py`, and
`validate_results.json`, the numbers measured there without the profiler (CUDA events, host
launch times). These tests re-analyse the recorded runs on the CPU and check that autoprof
still concludes what the hardware showed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoprof

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu_h200"
RESULTS = json.loads((DATA / "validate_results.json").read_text())


def _local(device_path: str) -> Path:
    """`/tmp/runs/<name>/<run_id>` on the GPU machine -> the committed copy."""
    parts = Path(device_path).parts
    return DATA / parts[-2] / parts[-1]


def _seed(size: int, warm: bool) -> dict:
    (entry,) = [s for s in RESULTS["seed"] if s["size"] == size and s["warmup"] == warm]
    return entry


@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize(("size", "expected"), [(64, "overhead-bound"), (4096, "compute-bound")])
def test_seed_experiment_verdicts(size, expected, warm):
    run = autoprof.load(_local(_seed(size, warm)["path"]))
    assert run.is_cuda
    assert run.verdict().kind == expected


def test_seed_64_gpu_is_nearly_idle_and_4096_busy():
    busy_64 = autoprof.load(_local(_seed(64, True)["path"])).overhead().gpu_busy_pct
    busy_4096 = autoprof.load(_local(_seed(4096, True)["path"])).overhead().gpu_busy_pct
    assert busy_64 < 5.0 < 60.0 < busy_4096, (busy_64, busy_4096)


def test_cold_start_is_seen_in_the_warmup_calls():
    run = autoprof.load(_local(_seed(64, True)["path"]))
    warm_ms = run.manifest["warmup_call_ms"]
    assert warm_ms[0] > 100 * warm_ms[-1]  # the first call pays CUDA/cuBLAS initialisation
    ids = {d.id for d in run.diagnostics()}
    assert "cold-start" in ids


def test_gpu_time_per_call_matches_cuda_events_within_5_pct():
    acc = RESULTS["accuracy"]
    steps = autoprof.load(_local(acc["run"])).steps()
    per_call_us = float(steps.loc[steps["gpu_work_us"] > 0, "gpu_work_us"].median())
    error_pct = abs(per_call_us - acc["cuda_event_us_per_call"]) / acc["cuda_event_us_per_call"]
    assert error_pct * 100 <= 5.0, (per_call_us, acc["cuda_event_us_per_call"])


@pytest.mark.parametrize("row", RESULTS["sweep"], ids=lambda r: f"n{r['size']}")
def test_sweep_verdict_agrees_with_launch_vs_gpu_time(row):
    verdict = autoprof.load(_local(row["run"])).verdict().kind
    ratio = row["gpu_us_per_call"] / row["host_launch_us_per_call"]
    if ratio < 0.5:
        assert verdict == "overhead-bound"
    elif ratio > 2.0:
        assert verdict == "compute-bound"
    else:
        assert verdict in {"overhead-bound", "mixed", "compute-bound"}


def test_cuda_graph_fixes_the_overhead():
    graph = RESULTS["cuda_graph"]
    eager = autoprof.load(_local(graph["eager"]["path"]))
    replay = autoprof.load(_local(graph["graph"]["path"]))
    assert eager.verdict().kind == "overhead-bound"
    assert replay.verdict().kind != "overhead-bound"
    # the same GPU work, far less host time
    assert replay.overhead().self_cpu_us < eager.overhead().self_cpu_us / 5


def test_ddp_straggler_is_the_delayed_rank():
    (run_dir,) = (DATA / "ddp_step").iterdir()
    run = autoprof.load(run_dir)
    assert run.world_size == 2
    assert run.straggler_rank == 1
    assert "straggler" in {d.id for d in run.diagnostics()}
