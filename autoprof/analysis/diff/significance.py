"""Is B faster or slower than A? An interval for the change of the step that counts the noise
between runs, not only the noise between the steps of one run.

The model: a step's log time is the program's level, plus the level of the run (process start,
memory placement, clocks, the machine's load while it ran: the same for all its steps), plus
the step's own noise. Steps of one run only show the last; a bootstrap of them alone gives an
interval that two recordings of the same program miss as often as they differ by their runs'
levels. So the change is judged against both:

- **within runs**: each run's steps are resampled with replacement (``RESAMPLES`` times, a
  fixed seed: the same runs always give the same answer), each resample gives the run's log
  median, a side's level is the mean of its runs' log medians;
- **between runs**: each resample also draws the two sides' run levels, with the between-run
  spread ``between_run_pct`` (the standard deviation of a run's median, % of it) measured from
  repeats when there are some, else never below ``noise_floor_pct``:

  ===========================  ==================================================
  the runs                     the between-run spread
  ===========================  ==================================================
  repeats (2+ runs a side)     the spread of the runs' medians, less what their
                               steps' noise explains, at least ``REPEATS_FLOOR_PCT``
                               (``source`` = ``repeats``; drawn from Student's t
                               with the repeats' degrees of freedom)
  one run a side, 6+ steps     the spread of the medians of each run's first,
                               middle and last third (the machine's load changing
                               while the run ran), less what the steps' noise
                               explains (``source`` = ``blocks``); what is constant
                               within a process it cannot see: the floor stands
                               for that
  fewer steps                  the floor (``source`` = ``floor``)
  ===========================  ==================================================

The change is ``exp(mean log median B - mean log median A) - 1`` (the median step's change
for one run a side); the interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
percentiles of the resampled changes; ``min_detectable_pct`` is the interval's half-width
around no change: a change under it cannot be told from noise with these runs. The verdict is
``slower`` (``faster``) only when the whole interval lies above (below) zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

SpeedVerdict = Literal["faster", "slower", "no significant change", "too few steps"]
NoiseSource = Literal["repeats", "blocks", "floor"]

MIN_STEPS = 3  # fewer samples than this in either side: no verdict
# The least between-run spread assumed with one run a side (sd of a run's median step, % of
# it): what one process against the next changes that no run's own steps show (placement,
# clocks, what else the machine runs). Measured between recordings of one program (the
# benchmarks/diff_validation.py runs of docs/diff.md): 6.4-6.8% on an H200, 7.7-13% on a
# 16-core host's CPU, both hosts running other recordings at the same time.
CPU_NOISE_FLOOR_PCT = 13.0
CUDA_NOISE_FLOOR_PCT = 7.0
NOISE_FLOOR_PCT = CPU_NOISE_FLOOR_PCT  # when the device is not known
# The same for the GPU's work per step (the kernels' and copies' own time), which the host's
# pace does not move: between the H200 recordings of nine programs made on two starts of the
# machine a day apart (tests/data/gpu_h200 and gpu_h200_rerun: the seed sweep and a 4096
# GEMM), a run's median GPU time per step moved by 1.3% (sd; the step time by up to 50%).
CUDA_GPU_NOISE_FLOOR_PCT = 1.5
# Repeats measure the spread; this only keeps a measured zero (identical runs) from giving a
# zero-width interval.
REPEATS_FLOOR_PCT = 1.0
BLOCKS = 3  # a single run's steps split into this many consecutive blocks
MIN_BLOCK_STEPS = 2  # each block needs this many steps for the blocks' spread
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
    runs_a: int = 1
    runs_b: int = 1
    between_run_pct: float | None = None  # sd of a run's median used, % of it
    between_run_source: NoiseSource = "floor"
    min_detectable_pct: float | None = None  # the interval's half-width around no change

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
            "runs_a": self.runs_a,
            "runs_b": self.runs_b,
            "between_run_pct": self.between_run_pct,
            "between_run_source": self.between_run_source,
            "min_detectable_pct": self.min_detectable_pct,
        }


def _finite(samples: Sequence[float]) -> np.ndarray:
    """The samples that are step times: finite and above zero (a zero has no log)."""
    values = np.asarray([float(v) for v in samples], dtype=np.float64)
    return values[np.isfinite(values) & (values > 0)]


def _log_median(run: np.ndarray) -> float:
    return float(np.log(np.median(run)))


def _log_median_resamples(run: np.ndarray, rng: np.random.Generator,
                          resamples: int) -> np.ndarray:
    """``resamples`` log medians of ``run`` resampled with replacement."""
    medians: np.ndarray = np.log(np.median(rng.choice(run, size=(resamples, run.size)), axis=1))
    return medians


def _level_resamples(runs: list[np.ndarray], rng: np.random.Generator,
                     resamples: int) -> np.ndarray:
    """A side's resampled level: the mean log median of its runs, each run's steps
    resampled."""
    level: np.ndarray = np.mean([_log_median_resamples(r, rng, resamples) for r in runs],
                                axis=0)
    return level


def _spread_beyond_noise(groups: list[list[np.ndarray]], rng: np.random.Generator,
                         resamples: int) -> tuple[float, int]:
    """The variance of the groups' members' log medians around their group's mean, less what
    the members' own steps explain, and its degrees of freedom."""
    squares, dof, within = 0.0, 0, []
    for members in groups:
        if len(members) < 2:
            continue
        medians = np.array([_log_median(m) for m in members])
        squares += float(np.sum((medians - medians.mean()) ** 2))
        dof += len(members) - 1
        within += [float(np.var(_log_median_resamples(m, rng, resamples // 4)))
                   for m in members]
    if dof == 0:
        return 0.0, 0
    return max(0.0, squares / dof - float(np.mean(within))), dof


def _blocks(run: np.ndarray) -> list[np.ndarray]:
    if run.size < BLOCKS * MIN_BLOCK_STEPS:
        return []
    return list(np.array_split(run, BLOCKS))


def between_run_spread(runs_a: list[np.ndarray], runs_b: list[np.ndarray],
                       noise_floor_pct: float, rng: np.random.Generator,
                       resamples: int = RESAMPLES) -> tuple[float, int, NoiseSource]:
    """The between-run sd of a run's log median used, its degrees of freedom (0: taken as
    known) and where it comes from (see the module docstring)."""
    floor = np.log1p(noise_floor_pct / 100.0)
    if len(runs_a) > 1 or len(runs_b) > 1:
        var, dof = _spread_beyond_noise([runs_a, runs_b], rng, resamples)
        return max(float(np.sqrt(var)), np.log1p(REPEATS_FLOOR_PCT / 100.0)), dof, "repeats"
    groups = [_blocks(r) for r in (*runs_a, *runs_b)]
    if all(groups):
        var, _ = _spread_beyond_noise(groups, rng, resamples)
        if np.sqrt(var) > floor:
            return float(np.sqrt(var)), 0, "blocks"
    return float(floor), 0, "floor"


def _pct(log_ratio: float) -> float:
    return float(np.expm1(log_ratio) * 100.0)


def _too_few(a: list[np.ndarray], b: list[np.ndarray]) -> Change:
    na, nb = sum(r.size for r in a), sum(r.size for r in b)
    pooled_a, pooled_b = np.concatenate([*a, np.empty(0)]), np.concatenate([*b, np.empty(0)])
    return Change(float(np.median(pooled_a)) if na else None,
                  float(np.median(pooled_b)) if nb else None, na, nb, None, None, None,
                  "too few steps",
                  f"needs at least {MIN_STEPS} steps with a time above zero in each run "
                  f"(A has {na}, B has {nb})", len(a), len(b))


def noise_band(detectable_pct: float) -> str:
    """The minimum detectable change as a ratio in both directions: the interval's half-width
    is symmetric in log space, so ``+50%`` reads ``between 0.67x and 1.5x`` (a step cannot get
    more than 100% faster; a percentage beside a -76% change would read as one)."""
    up = 1.0 + detectable_pct / 100.0
    return f"changes between {1.0 / up:.2f}x and {up:.2f}x cannot be told from noise"


def _decide(low_pct: float, high_pct: float, detectable_pct: float) -> tuple[SpeedVerdict, str]:
    if low_pct > 0:
        return "slower", "the whole interval lies above zero"
    if high_pct < 0:
        return "faster", "the whole interval lies below zero"
    return "no significant change", (
        f"the interval includes zero: {noise_band(detectable_pct)} with these runs")


def repeated_change(
    runs_a: Sequence[Sequence[float]],
    runs_b: Sequence[Sequence[float]],
    *,
    noise_floor_pct: float = NOISE_FLOOR_PCT,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Change:
    """The change of the step from A to B, each side one or more runs' per-step samples,
    with an interval that counts the noise between runs (the module docstring)."""
    a = [r for r in (_finite(s) for s in runs_a) if r.size]
    b = [r for r in (_finite(s) for s in runs_b) if r.size]
    if sum(r.size for r in a) < MIN_STEPS or sum(r.size for r in b) < MIN_STEPS:
        return _too_few(a, b)
    rng = np.random.default_rng(SEED)
    level_a = _level_resamples(a, rng, resamples)
    level_b = _level_resamples(b, rng, resamples)
    sd, dof, source = between_run_spread(a, b, noise_floor_pct, rng, resamples)
    draws = rng.standard_t(dof, resamples) if dof else rng.standard_normal(resamples)
    point = (float(np.mean([_log_median(r) for r in b]))
             - float(np.mean([_log_median(r) for r in a])))
    changes = level_b - level_a + draws * sd * np.sqrt(1.0 / len(a) + 1.0 / len(b))
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = (float(v) for v in np.percentile(changes, [tail, 100.0 - tail]))
    detectable_pct = _pct(max(point - low, high - point))
    verdict, reason = _decide(_pct(low), _pct(high), detectable_pct)
    median_a = float(np.exp(np.mean([_log_median(r) for r in a])))
    return Change(median_a, median_a * float(np.exp(point)),
                  sum(r.size for r in a), sum(r.size for r in b), _pct(point), _pct(low),
                  _pct(high), verdict, reason, len(a), len(b), _pct(sd), source, detectable_pct)


def median_change(
    samples_a: Sequence[float],
    samples_b: Sequence[float],
    *,
    noise_floor_pct: float = NOISE_FLOOR_PCT,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Change:
    """The change of the median step from one run of A to one run of B (see
    :func:`repeated_change`)."""
    return repeated_change([samples_a], [samples_b], noise_floor_pct=noise_floor_pct,
                           resamples=resamples, confidence=confidence)
