"""The ranks at a glance, readable at a thousand ranks: grids for a heatmap and the outliers.

- ``rank_by_bucket(breakdown)``: one cell per (rank, bucket): the bucket's share of the rank's
  mean step, in percent (the seven buckets of metrics/breakdown.py);
- ``rank_by_step(breakdown)``: one cell per (rank, step): the step's time, in microseconds;
- ``rank_outliers(table)``: the ranks whose robust z-score ((x - median) / (1.4826 MAD), the
  reduce's) passes ``OUTLIER_Z`` on a rank-table column, farthest first.

The map's per-rank results (``RankResult``: a run analysed rank by rank) give the same two
grids through ``results_breakdown`` (each rank's mean step and buckets, one row a rank) and
``results_steps`` (each rank's step times), shaped as the breakdown's per-step table.

A grid never has more than ``max_cells`` cells: past that, consecutive ranks are grouped
(``rank_lo``-``rank_hi``) and a group's cell is the mean of its ranks, the last steps are
kept and the others left out, so a chart of 1,024 ranks draws a few thousand rectangles, not
one row per rank. The outliers are computed per rank before any grouping, so a rank that a
group's mean hides is still named.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.breakdown import BUCKETS
from autoprof.analysis.scale.reduce import OUTLIER_Z, robust_z
from autoprof.analysis.scale.result import RankResult

MAX_CELLS = 8_192
MAX_STEPS = 64
GRID_COLUMNS = ["rank_lo", "rank_hi", "ranks", "column", "value"]


def _groups(ranks: np.ndarray, max_rows: int) -> np.ndarray:
    """Each rank's group: consecutive ranks (in rank order), at most ``max_rows`` groups."""
    order = np.argsort(ranks, kind="stable")
    size = max(1, -(-len(ranks) // max(1, max_rows)))  # ceil
    group = np.empty(len(ranks), dtype=np.int64)
    group[order] = np.arange(len(ranks)) // size
    return group


def _grid(wide: pd.DataFrame, max_cells: int) -> pd.DataFrame:
    """``wide`` (index rank, one column per grid column) -> GRID_COLUMNS rows, ranks grouped
    so that rows x columns <= max_cells."""
    if wide.empty:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in GRID_COLUMNS})
    ranks = wide.index.to_numpy(dtype=np.int64)
    group = _groups(ranks, max(1, max_cells // max(1, wide.shape[1])))
    by = wide.groupby(group, sort=True)
    members = pd.Series(ranks).groupby(group, sort=True)
    means = by.mean()
    means.columns = [str(c) for c in means.columns]
    long = means.assign(rank_lo=members.min().to_numpy(), rank_hi=members.max().to_numpy(),
                        ranks=members.size().to_numpy()).melt(
        id_vars=["rank_lo", "rank_hi", "ranks"], var_name="column", value_name="value")
    return long[GRID_COLUMNS].reset_index(drop=True)


def rank_by_bucket(breakdown: pd.DataFrame, max_cells: int = MAX_CELLS) -> pd.DataFrame:
    """Per rank (or group of ranks) and bucket: the bucket's share of the mean step, %."""
    cols = [f"{b}_us" for b in BUCKETS if f"{b}_us" in breakdown]
    if breakdown.empty or not cols:
        return _grid(pd.DataFrame(), max_cells)
    mean = breakdown.groupby("rank", sort=True)[[*cols, "step_us"]].mean()
    step = mean["step_us"].where(mean["step_us"] > 0)
    wide = pd.DataFrame({c[: -len("_us")]: 100.0 * mean[c] / step for c in cols},
                        index=mean.index)
    return _grid(wide, max_cells)


def rank_by_step(breakdown: pd.DataFrame, max_cells: int = MAX_CELLS,
                 max_steps: int = MAX_STEPS) -> pd.DataFrame:
    """Per rank (or group of ranks) and step (the last ``max_steps``): the step's time, us."""
    if breakdown.empty:
        return _grid(pd.DataFrame(), max_cells)
    wide = breakdown.pivot_table(index="rank", columns="step", values="step_us",
                                 aggfunc="mean", sort=True)
    return _grid(wide.iloc[:, -max_steps:], max_cells)


def rank_outliers(table: pd.DataFrame, column: str = "step_time_us_median") -> pd.DataFrame:
    """Ranks whose robust z on ``column`` passes OUTLIER_Z: rank, value, z, farthest first."""
    if table.empty or column not in table:
        return pd.DataFrame({"rank": pd.Series(dtype=np.int64), column: pd.Series(dtype=float),
                             "z": pd.Series(dtype=float)})
    values = table[column].to_numpy(dtype=float)
    z = robust_z(values)
    out = pd.DataFrame({"rank": table["rank"].to_numpy(dtype=np.int64), column: values, "z": z})
    out = out[np.abs(out["z"]) > OUTLIER_Z]
    return out.iloc[np.argsort(-np.abs(out["z"].to_numpy()), kind="stable")].reset_index(
        drop=True)


def results_breakdown(results: Sequence[RankResult]) -> pd.DataFrame:
    """One row per rank: its mean step and mean bucket times (``RankResult.breakdown``), in the
    breakdown's columns (``rank``, ``step_us``, ``<bucket>_us``): ``rank_by_bucket`` of it
    is the share each bucket takes of the rank's mean step, as for the merged table."""
    rows = []
    for r in results:
        buckets = r.breakdown.get("buckets_us") or {}
        rows.append({"rank": r.rank, "step_us": float(r.breakdown.get("step_us") or 0.0),
                     **{f"{b}_us": float(buckets.get(b) or 0.0) for b in BUCKETS}})
    columns = ["rank", "step_us", *[f"{b}_us" for b in BUCKETS]]
    return pd.DataFrame(rows, columns=columns)


def results_steps(results: Sequence[RankResult]) -> pd.DataFrame:
    """``rank``, ``step``, ``step_us``: every step of every rank (``RankResult.steps`` and
    ``step_us``, the breakdown's step time), for ``rank_by_step``."""
    return pd.DataFrame({
        "rank": np.asarray([r.rank for r in results for _ in r.steps], dtype=np.int64),
        "step": np.asarray([s for r in results for s in r.steps], dtype=np.int64),
        "step_us": np.asarray([us for r in results for us in r.step_us], dtype=float),
    })
