"""The H200 truth sets' recorded measurements, for tests that hold a prediction to them.

A truth set (docs/validation.md) holds each workload's fixes applied by hand and timed
without a profiler in `ground_truth.json`, beside the run folders it names: the tuned first
recordings under `tests/data/`, the held-out sets under `benchmarks/validation/data/`. A
test reads the measured speedup from there and holds the prediction to the goal the
validation page states, never to a prediction copied in.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "tests" / "data", REPO / "benchmarks" / "validation" / "data")
GOAL_ABS_ERROR = 0.25  # a prediction within 25% of the fix timed by hand (docs/validation.md)


def truth_dir(folder: str) -> Path:
    """The truth set named `folder`, wherever it lives."""
    for root in ROOTS:
        if (root / folder / "ground_truth.json").is_file():
            return root / folder
    raise FileNotFoundError(f"no truth set {folder!r} (ground_truth.json) under "
                            f"{[str(r) for r in ROOTS]}")


@cache
def _truth(folder: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((truth_dir(folder) / "ground_truth.json").read_text())
    return data


def measured_speedup(folder: str, workload: str, fix: str) -> float:
    """The iteration speedup of `fix` on `workload`, timed by hand without a profiler."""
    speedups = _truth(folder)["workloads"][workload]["ground_truth"]["speedups"]
    return float(speedups[fix]["iter"]["speedup"])


def within_goal(predicted: float, measured: float) -> bool:
    """The prediction is within the stated goal of the measurement."""
    return abs(predicted - measured) / measured <= GOAL_ABS_ERROR
