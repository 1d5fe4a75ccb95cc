"""The verdict reads the typical (median) step, so one slow step does not flip it.

The recorded runs are the seed experiment (bf16 ``x @ w + b``, ``@autoprof`` with its
defaults) in 10 fresh processes per size on an H100 (``benchmarks/gpu/seed_verdicts.py``):
at 4096x4096 the GPU's arithmetic sets the pace, at 64x64 the host's launches do. Read by the
mean step, 2 of the 10 runs at 4096 were `mixed` (their first profiled step twice as long)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.store import committed

from autoprof.analysis.metrics.verdict import (
    classify_breakdown,
    classify_sides,
    typical_step,
)

SEEDS = Path(__file__).resolve().parents[2] / "data" / "gpu_h100_seed"
TRUTH = {"seed4096": "compute-bound", "seed64": "overhead-bound"}


def _step(step_us: float, gpu_us: float) -> dict[str, object]:
    return {"rank": 0, "step": 0, "step_us": step_us,
            "buckets_us": {"gpu_compute": gpu_us, "host_launch": step_us - gpu_us}}


def _breakdown(steps: list[dict[str, object]]) -> dict[str, object]:
    mean_us = sum(float(st["step_us"]) for st in steps) / len(steps)  # type: ignore[arg-type]
    gpu = sum(float(st["buckets_us"]["gpu_compute"]) for st in steps) / len(steps)  # type: ignore[index]
    return {"steps": len(steps), "step_us": mean_us,
            "buckets_pct": {"gpu_compute": 100 * gpu / mean_us,
                            "host_launch": 100 * (mean_us - gpu) / mean_us},
            "per_step": steps}


def test_one_slow_step_of_three_does_not_flip_the_verdict() -> None:
    steps = [_step(600.0, 200.0), _step(206.0, 200.0), _step(205.0, 200.0)]
    bd = _breakdown(steps)
    assert classify_sides(bd["buckets_pct"], True) == "mixed"  # the mean alone: flipped
    assert classify_breakdown(bd, True) == "compute-bound"
    found = typical_step(bd)
    assert found is not None and found[0] == 206.0


def test_fewer_than_three_steps_keep_the_mean() -> None:
    bd = _breakdown([_step(450.0, 200.0), _step(205.0, 200.0)])
    assert typical_step(bd) is None
    assert classify_breakdown(bd, True) == classify_sides(bd["buckets_pct"], True)


def test_the_typical_step_of_an_even_count_is_the_faster_middle_one() -> None:
    bd = _breakdown([_step(t, 0.9 * t) for t in (400.0, 300.0, 200.0, 100.0)])
    found = typical_step(bd)
    assert found is not None and found[0] == 200.0


@pytest.mark.parametrize("size", sorted(TRUTH))
def test_the_seed_verdict_is_right_in_every_fresh_process(size: str) -> None:
    runs = sorted((SEEDS / size).iterdir())
    assert len(runs) == 10
    kinds = [committed.run(run).analysis.verdict.kind for run in runs]
    assert kinds == [TRUTH[size]] * len(runs)
