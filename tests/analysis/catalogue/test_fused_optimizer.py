"""The fused optimizer's replay on the H100 catalogue's development program: Adam over 192
tensors of 256x64 with foreach=False (1,344 kernels of 1.1-1.7 us a step), `fused=True`
timed by hand without the profiler in fresh processes (`catalogue_truth.json`). A
multi-tensor kernel pays the device's per-kernel floor once, so the replayed fused step is
held to the fused program's measured step, and the measured gain to the stated interval."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from support.store import committed

from autoprof.analysis.metrics.replay.baseline import host_baseline
from autoprof.analysis.metrics.replay.fixes import fix_changes
from autoprof.analysis.metrics.replay.loop import loop_split
from autoprof.analysis.metrics.replay.replay import replay_steps

CATALOGUE = Path(__file__).resolve().parents[2] / "data" / "gpu_h100_catalogue"
FUSED_BAND = 0.25  # the fused-optimizer entry's stated error band (docs/analysis.md)


@pytest.mark.slow
def test_adam_over_small_tensors_is_fused_first_and_its_step_is_the_measured() -> None:
    case = json.loads((CATALOGUE / "catalogue_truth.json").read_text())["cases"][
        "adam_foreach_false"]
    run = committed.run(CATALOGUE / case["record"]["run"])
    top = run.analysis.opportunities[0]
    assert top["fix"] == "fused-optimizer"
    interval = top["predicted_interval"]
    assert interval["low"] <= case["measured_speedup"] <= interval["high"]
    events, call = run.analysis.events, run.analysis.call_region
    assert call is not None
    baseline = host_baseline(events, call, loop_split(events, call), run.analysis.reference)
    fused = replay_steps(events, [*baseline, *fix_changes("fused-optimizer", call)])
    fused_ms = statistics.median(r.step_us for r in fused) / 1e3
    assert fused_ms == pytest.approx(case["fixed_ms_median"], rel=FUSED_BAND)
