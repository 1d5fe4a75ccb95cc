"""How far a measured gain strays from its fix's prediction: the model-error band of each fix.

A prediction's stated interval (`predictions.predicted_interval`) is the replay's spread over
the profiled steps (`predicted_spread`, the inputs' noise) widened by the model's own error,
measured per fix family on development truth: fixes applied by hand and timed without a
profiler beside what the summary predicted for them. The bands live in `error_band.json`
beside this module, written by `benchmarks/validation/error_band.py` from committed data (a
test holds the file to the script's output on the committed pairs); that file names its
sources, its date and how many pairs each family has.

The method (the script's docstring has it in full): for each development pair, the model's
error ln(measured / predicted). A family's band is the 10th and 90th percentiles of its
errors as widenings (0 at least on each side), pulled toward the same percentiles over every
family in proportion to how few pairs it has (`prior_points` pairs of weight for the pooled
value), and never under `floor_log`: the truth's own repeatability, from the fixes timed
twice in fresh processes. A family without development pairs takes the pooled band with the
floor. The point estimate is the model's; only its interval reads this file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

BANDS_FILE = Path(__file__).with_name("error_band.json")


@dataclass(frozen=True)
class Band:
    """One family's widening of the spread, in log ratio: the interval runs from the spread's
    minimum times exp(-down_log) to its maximum times exp(up_log); `points`: the development
    pairs behind it (0: the pooled band)."""

    down_log: float
    up_log: float
    points: int

    def widen(self, value: float, spread_min: float, spread_max: float) -> tuple[float, float]:
        """(low, high): the spread, stretched to hold `value`, widened by the band."""
        low = min(spread_min, value) * math.exp(-self.down_log)
        high = max(spread_max, value) * math.exp(self.up_log)
        return low, high


@cache
def _table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(BANDS_FILE.read_text())
    return table


def _band(row: dict[str, Any]) -> Band:
    return Band(float(row["down_log"]), float(row["up_log"]), int(row["points"]))


def band_of(fix: str | None) -> Band:
    """The model-error band of fix family `fix` (`cuda-graph`, `tf32`, ...): its own where
    the development data has pairs of it, else the pooled band."""
    table = _table()
    row = (table["families"] or {}).get(str(fix))
    return _band(row) if row is not None else _band({**table["pooled"], "points": 0})
