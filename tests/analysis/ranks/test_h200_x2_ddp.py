"""Pins, without a GPU, what two-rank NCCL DDP runs on two H200s showed (docs/gpu-validation.md).

`tests/data/gpu_h200_x2/` holds the run folders `benchmarks/gpu/ddp_cases.py` wrote under
`torchrun --nproc_per_node 2` (NCCL), and per rank `<case>.rank<R>.json`: the CUDA-event time and
`torch.cuda.max_memory_allocated()` of every call, with the profiled calls named.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.store import committed

from autoprof.analysis.metrics.stats import union_length

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_h200_x2"
CASES = ("straggler", "balanced", "overlap", "killed")


def _run_dir(case: str) -> Path:
    (run,) = sorted((DATA / "runs" / f"ddp_{case}").iterdir())
    return run


@pytest.fixture(scope="module")
def summaries() -> dict[str, dict]:
    return {case: committed.run(_run_dir(case)).summary() for case in CASES}


def _rank(summary: dict, rank: int) -> dict:
    (entry,) = [r for r in summary["ranks"] if r["rank"] == rank]
    return entry


def test_slow_rank_is_the_straggler_and_both_ranks_are_told_why(summaries):
    s = summaries["straggler"]
    assert s["straggler_rank"] == 1
    fast, slow = _rank(s, 0), _rank(s, 1)
    # rank 0: exposed communication leads, named as waiting for rank 1
    first = fast["opportunities"][0]
    assert first["cause"] == "gpu_communication"
    assert first["pct_of_step"] > 25
    assert "waits here for rank 1" in first["hint"]
    # rank 1: its first opportunity is the host work of the labelled delaying region
    own = slow["opportunities"][0]
    assert own["cause"] == "host_cpu_work"
    assert own["where"][0]["name"] == "slow_input"
    assert slow["breakdown"]["buckets_pct"]["gpu_communication"] < 5
    (finding,) = [d for d in s["diagnostics"] if d["id"] == "straggler"]
    assert finding["evidence"]["straggler_rank"] == 1


@pytest.mark.parametrize("case", ["balanced", "overlap", "killed"])
def test_without_a_delay_there_is_no_straggler_and_ranks_are_balanced(summaries, case):
    s = summaries[case]
    assert s["straggler_rank"] is None
    assert not [d for d in s["diagnostics"] if d["id"] == "straggler"]
    steps = [_rank(s, r)["breakdown"]["step_us"] for r in (0, 1)]
    assert max(steps) / min(steps) < 1.15
    exposed = [_rank(s, r)["breakdown"]["buckets_pct"]["gpu_communication"] for r in (0, 1)]
    assert max(exposed) < 10


def _nccl_in_steps_us(run_dir: Path, rank: int) -> tuple[float, float]:
    """(NCCL kernel time inside the rank's step windows, summed window time), from the trace."""
    run = committed.run(run_dir)
    windows = run.breakdown(rank=rank)
    ev = run.events
    nccl = ev[(ev["rank"] == rank) & ev["is_gpu_work"] & ev["name"].str.startswith("nccl")]
    ts, end = nccl["ts_us"].to_numpy(float), nccl["end_us"].to_numpy(float)
    inside = sum(union_length(ts, end, float(w.start_us), float(w.end_us))
                 for w in windows.itertuples())
    return inside, float(windows["step_us"].sum())


def test_overlapped_communication_counts_as_compute(summaries):
    """Small DDP buckets: NCCL kernels run about 1 ms per step, almost all of it beside the
    backward pass's kernels; only the part with nothing else on the GPU is exposed."""
    for rank in (0, 1):
        nccl_us, window_us = _nccl_in_steps_us(_run_dir("overlap"), rank)
        breakdown = _rank(summaries["overlap"], rank)["breakdown"]
        exposed_us = breakdown["buckets_us"]["gpu_communication"] * 3  # three steps
        assert nccl_us > 2_000  # communication really happened in the window
        assert exposed_us < 0.15 * nccl_us  # most of it overlapped compute
        assert breakdown["buckets_pct"]["gpu_compute"] > 90
        assert breakdown["buckets_pct"]["gpu_communication"] < 1
        assert window_us == pytest.approx(breakdown["step_us"] * 3, rel=1e-6)


def test_exposed_communication_never_exceeds_nccl_kernel_time():
    for case in CASES:
        run = committed.run(_run_dir(case))
        for rank in (0, 1):
            nccl_us, _ = _nccl_in_steps_us(_run_dir(case), rank)
            exposed = run.breakdown(rank=rank)["gpu_communication_us"].sum()
            assert exposed <= nccl_us + 1.0, (case, rank)


@pytest.mark.parametrize("case", CASES)
def test_both_ranks_finished_through_the_finisher(case):
    run_dir = _run_dir(case)
    manifests = [run_dir / "manifest.json", run_dir / "rank0.manifest.json",
                 run_dir / "rank1.manifest.json"]
    for manifest in manifests:
        assert json.loads(manifest.read_text())["status"] == "complete", manifest
    run = committed.run(run_dir)
    assert run.world_size == 2
    assert sorted(np.unique(run.events["rank"]).tolist()) == [0, 1]


def test_killed_job_left_complete_folders():
    """Each rank SIGKILLed itself right after the call that ended the profiled window."""
    for rank in (0, 1):
        record = json.loads((DATA / f"killed.rank{rank}.json").read_text())
        assert record["killed_after_call"] == 7
    manifest = json.loads((_run_dir("killed") / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert committed.run(_run_dir("killed")).summary()["status"] == "complete"


@pytest.mark.parametrize("case", ["straggler", "balanced", "overlap"])
def test_memory_peak_per_rank_matches_max_memory_allocated(summaries, case):
    devices = {d["device"]: d for d in summaries[case]["memory"]["devices"]}
    for rank in (0, 1):
        truth = json.loads((DATA / f"{case}.rank{rank}.json").read_text())
        peaks = truth["max_memory_allocated_per_call"]
        expected = max(peaks[i] for i in truth["profiled_calls"])
        got = devices[f"cuda:{rank}"]["peak_allocated_bytes"]
        assert got == pytest.approx(expected, rel=0.02)
