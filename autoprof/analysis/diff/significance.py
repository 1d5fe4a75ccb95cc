"""Is B faster or slower than A? A bootstrap confidence interval of the change in the median.

Method: the per-step samples of each run are resampled with replacement (``resamples`` times,
a fixed seed, so the same inputs always give the same answer); each resample gives the
relative change of the medians, ``median(B*) / median(A*) - 1``; the interval is the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles of those changes (the
percentile bootstrap). The verdict is ``slower`` (``faster``) only when the whole interval
lies above (below) zero **and** the point change is at least ``min_effect_pct``: steps of one
program differ by a few percent from run to run, and that noise is no change.

====================  =====================================================
samples (A / B)       3, 4, 3 ms / 4.4, 4.4, 4.5 ms
change                +46.7 % (95 % CI +10 % .. +50 %)
verdict               slower
====================  =====================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

SpeedVerdict = Literal["faster", "slower", "no significant change", "too few steps"]

MIN_STEPS = 3  # fewer samples than this in either run: no verdict
MIN_EFFECT_PCT = 2.0  # a smaller change than this is run-to-run noise, whatever the interval
RESAMPLES = 4000
CONFIDENCE = 0.95
SEED = 20240601


@dataclass(frozen=True)
class Change:
    """The change of one per-step quantity from A to B."""

    median_a: float | None
    median_b: float | None
    samples_a: int
    samples_b: int
    change_pct: float | None  # (median_b / median_a - 1) * 100
    ci_low_pct: float | None
    ci_high_pct: float | None
    verdict: SpeedVerdict
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "median_a": self.median_a,
            "median_b": self.median_b,
            "samples_a": self.samples_a,
            "samples_b": self.samples_b,
            "change_pct": self.change_pct,
            "ci_low_pct": self.ci_low_pct,
            "ci_high_pct": self.ci_high_pct,
            "verdict": self.verdict,
            "reason": self.reason,
        }


def _finite(samples: Sequence[float]) -> np.ndarray:
    """The samples that are step times: finite and above zero (a zero in A would make a
    resample's median zero and its change infinite, which JSON cannot carry)."""
    values = np.asarray([float(v) for v in samples], dtype=np.float64)
    return values[np.isfinite(values) & (values > 0)]


def _bootstrap_changes_pct(a: np.ndarray, b: np.ndarray, resamples: int) -> np.ndarray:
    rng = np.random.default_rng(SEED)
    a_medians = np.median(rng.choice(a, size=(resamples, a.size), replace=True), axis=1)
    b_medians = np.median(rng.choice(b, size=(resamples, b.size), replace=True), axis=1)
    changes: np.ndarray = (b_medians / a_medians - 1.0) * 100.0
    return changes


def _decide(
    change_pct: float, low_pct: float, high_pct: float, min_effect_pct: float
) -> tuple[SpeedVerdict, str]:
    if low_pct > 0 and change_pct >= min_effect_pct:
        return "slower", "the whole interval lies above zero"
    if high_pct < 0 and change_pct <= -min_effect_pct:
        return "faster", "the whole interval lies below zero"
    if low_pct > 0 or high_pct < 0:
        return "no significant change", (
            f"the change is real but under {min_effect_pct:g} %, within run-to-run noise"
        )
    return "no significant change", "the interval includes zero"


def median_change(
    samples_a: Sequence[float],
    samples_b: Sequence[float],
    *,
    min_effect_pct: float = MIN_EFFECT_PCT,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Change:
    """The relative change of the median from A to B, with its bootstrap interval and verdict."""
    a, b = _finite(samples_a), _finite(samples_b)
    if a.size < MIN_STEPS or b.size < MIN_STEPS:
        return Change(float(np.median(a)) if a.size else None,
                      float(np.median(b)) if b.size else None, int(a.size), int(b.size),
                      None, None, None, "too few steps",
                      f"needs at least {MIN_STEPS} steps with a time above zero in each run "
                      f"(A has {a.size}, B has {b.size})")
    median_a, median_b = float(np.median(a)), float(np.median(b))
    change_pct = (median_b / median_a - 1.0) * 100.0
    changes = _bootstrap_changes_pct(a, b, resamples)
    tail_pct = (1.0 - confidence) / 2.0 * 100.0
    low_pct, high_pct = (float(v) for v in np.percentile(changes, [tail_pct, 100.0 - tail_pct]))
    verdict, reason = _decide(change_pct, low_pct, high_pct, min_effect_pct)
    return Change(median_a, median_b, int(a.size), int(b.size), change_pct, low_pct, high_pct,
                  verdict, reason)
