"""Pins, without a GPU, the conclusions of the H200 validation runs (docs/gpu-validation.md).

`tests/data/gpu_h200/` and `tests/data/gpu_h200_rerun/` (recorded again once autoprof timed
the schedule's wait-step calls) each hold the run folders autoprof wrote on NVIDIA H200s
through `benchmarks/gpu/validate.py` and `benchmarks/gpu/ddp_straggler.py`, and
`validate_results.json`, the numbers measured there without the profiler (CUDA events, host
launch times). These tests re-analyse the recorded runs on the CPU and check that autoprof
still concludes what the hardware showed, on both recordings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.store import committed

DATA_ROOT = Path(__file__).resolve().parents[2] / "data"
RECORDINGS = ("gpu_h200", "gpu_h200_rerun")
# the first recording's seed, CUDA-graph and DDP runs are the shipped examples
EXAMPLES = DATA_ROOT.parents[1] / "traces" / "examples"
RESULTS = {s: json.loads((DATA_ROOT / s / "validate_results.json").read_text()) for s in RECORDINGS}


@pytest.fixture(params=RECORDINGS)
def recording(request) -> str:
    return request.param


def _local(recording: str, device_path: str) -> Path:
    """`/tmp/runs/<name>/<run_id>` on the GPU machine -> the committed copy."""
    parts = Path(device_path).parts
    return _recording_dir(recording, parts[-2]) / parts[-1]


def _recording_dir(recording: str, name: str) -> Path:
    moved = recording == "gpu_h200" and (EXAMPLES / name).is_dir()
    return EXAMPLES / name if moved else DATA_ROOT / recording / name


def _seed(recording: str, size: int, warm: bool) -> Path:
    (entry,) = [s for s in RESULTS[recording]["seed"] if s["size"] == size and s["warmup"] == warm]
    return _local(recording, entry["path"])


@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize(("size", "expected"), [(64, "overhead-bound"), (4096, "compute-bound")])
def test_seed_experiment_verdicts(recording, size, expected, warm):
    run = committed.run(_seed(recording, size, warm))
    assert run.is_cuda
    assert run.verdict().kind == expected


def test_seed_64_gpu_is_nearly_idle_and_4096_busy(recording):
    busy_64 = committed.run(_seed(recording, 64, True)).overhead().gpu_busy_pct
    busy_4096 = committed.run(_seed(recording, 4096, True)).overhead().gpu_busy_pct
    assert busy_64 < 5.0 < 60.0 < busy_4096, (busy_64, busy_4096)


def test_cold_start_is_seen_in_the_warmup_calls(recording):
    run = committed.run(_seed(recording, 64, True))
    warm_ms = run.manifest["warmup_call_ms"]
    assert warm_ms[0] > 100 * warm_ms[-1]  # the first call pays CUDA/cuBLAS initialisation
    ids = {d.id for d in run.diagnostics()}
    assert "cold-start" in ids


@pytest.mark.parametrize("size", [64, 4096])
def test_cold_start_without_warmup_is_seen_in_the_timed_wait_call(size):
    """Only the re-run has `wait_call_ms`: with warm-up off, the cold first call falls in the
    schedule's wait step, which torch does not record but autoprof times."""
    run = committed.run(_seed("gpu_h200_rerun", size, False))
    assert run.manifest["warmup_call_ms"] == []
    (first_call_ms,) = run.manifest["wait_call_ms"]
    assert first_call_ms > 50.0  # CUDA context + cuBLAS set-up, measured ~91-94 ms
    (cold,) = [d for d in run.diagnostics() if d.id == "cold-start"]
    assert "warmup" in cold.hint


def test_gpu_time_per_call_matches_cuda_events_within_5_pct(recording):
    acc = RESULTS[recording]["accuracy"]
    steps = committed.run(_local(recording, acc["run"])).steps()
    per_call_us = float(steps.loc[steps["gpu_work_us"] > 0, "gpu_work_us"].median())
    error_pct = abs(per_call_us - acc["cuda_event_us_per_call"]) / acc["cuda_event_us_per_call"]
    assert error_pct * 100 <= 5.0, (per_call_us, acc["cuda_event_us_per_call"])


@pytest.mark.parametrize(
    ("recording", "row"),
    [(s, row) for s in RECORDINGS for row in RESULTS[s]["sweep"]],
    ids=lambda v: f"n{v['size']}" if isinstance(v, dict) else v,
)
def test_sweep_verdict_agrees_with_launch_vs_gpu_time(recording, row):
    verdict = committed.run(_local(recording, row["run"])).verdict().kind
    ratio = row["gpu_us_per_call"] / row["host_launch_us_per_call"]
    if ratio < 0.5:
        assert verdict == "overhead-bound"
    elif ratio > 2.0:
        assert verdict == "compute-bound"
    else:
        assert verdict in {"overhead-bound", "mixed", "compute-bound"}


def test_cuda_graph_fixes_the_overhead(recording):
    graph = RESULTS[recording]["cuda_graph"]
    eager = committed.run(_local(recording, graph["eager"]["path"]))
    replay = committed.run(_local(recording, graph["graph"]["path"]))
    assert eager.verdict().kind == "overhead-bound"
    assert replay.verdict().kind != "overhead-bound"
    # the same GPU work, far less host time
    assert replay.overhead().self_cpu_us < eager.overhead().self_cpu_us / 5


def test_ddp_straggler_is_the_delayed_rank(recording):
    (run_dir,) = _recording_dir(recording, "ddp_step").iterdir()
    run = committed.run(run_dir)
    assert run.world_size == 2
    assert run.straggler_rank == 1
    assert "straggler" in {d.id for d in run.diagnostics()}
