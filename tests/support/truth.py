"""The H200 truth sets' recorded measurements, for tests that hold a prediction to them.

A truth set (`tests/data/gpu_h200_truth*/`, docs/validation.md) holds each workload's fixes
applied by hand and timed without a profiler in `ground_truth.json`. A test reads the
measured speedup from there and holds the prediction to the goal the validation page states,
never to a prediction copied in.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"
GOAL_ABS_ERROR = 0.25  # a prediction within 25% of the fix timed by hand (docs/validation.md)


@cache
def _truth(folder: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / folder / "ground_truth.json").read_text())
    return data


def measured_speedup(folder: str, workload: str, fix: str) -> float:
    """The iteration speedup of `fix` on `workload`, timed by hand without a profiler."""
    speedups = _truth(folder)["workloads"][workload]["ground_truth"]["speedups"]
    return float(speedups[fix]["iter"]["speedup"])


def within_goal(predicted: float, measured: float) -> bool:
    """The prediction is within the stated goal of the measurement."""
    return abs(predicted - measured) / measured <= GOAL_ABS_ERROR
