"""Pins, without a GPU, the H200 off-path measurements (docs/gpu-validation.md).

`tests/data/gpu_h200/offpath/` holds what `benchmarks/gpu/offpath_cases.py` measured: the seed
loop at 4096 (bf16 x @ w + b) right after its profiled window and again seconds later in the
same process, in 100 ms buckets timed with CUDA events, three times, with the run folders.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

import autoprof

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_h200" / "offpath"
RESULTS = json.loads((DATA / "offpath.json").read_text())


def _run(repeat: int) -> autoprof.Run:
    (folder,) = sorted((DATA / "runs" / f"seed4096_r{repeat}").iterdir())
    return autoprof.load(folder)


@pytest.mark.parametrize("repeat", range(3))
def test_the_loop_runs_at_full_speed_right_after_the_window(repeat):
    """The median 100 ms bucket after the window is within 5% of the same loop later on."""
    entry = RESULTS["repeats"][repeat]
    after, later = entry["after_buckets_us"], entry["later_buckets_us"]
    assert len(after) >= 15 and len(later) >= 15  # about 3 s of buckets each
    assert statistics.median(after) / statistics.median(later) <= 1.05


@pytest.mark.parametrize("repeat", range(3))
def test_gpu_time_per_step_matches_cuda_events(repeat):
    """autoprof's GPU work per profiled step is the untraced CUDA-event time per call (5%)."""
    truth = RESULTS["repeats"][repeat]["truth"]["event_us_median"]
    run = _run(repeat)
    assert run.summary()["status"] == "complete"
    for gpu_us in run.steps()["gpu_work_us"]:
        assert gpu_us == pytest.approx(truth, rel=0.05)
