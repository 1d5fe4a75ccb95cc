"""The Ranks page's grids stay a few thousand cells at 1,024 ranks, cover every rank once,
and the outliers name the slow rank that a group's mean would hide."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.scale.heatmap import (
    MAX_CELLS,
    rank_by_bucket,
    rank_by_step,
    rank_outliers,
)

SLOW = 300


def _breakdown(ranks: int, steps: int) -> pd.DataFrame:
    rank = np.repeat(np.arange(ranks), steps)
    step = np.tile(np.arange(steps), ranks)
    slow = rank == SLOW
    compute = np.where(slow, 90.0, 60.0) + step  # the slow rank computes longer
    comm = np.where(slow, 20.0, 40.0)  # and waits less for the others
    return pd.DataFrame({"rank": rank, "step": step, "step_us": compute + comm,
                         "gpu_compute_us": compute, "gpu_communication_us": comm})


def _covers_every_rank_once(grid: pd.DataFrame, ranks: int) -> None:
    spans = grid.drop_duplicates(["rank_lo", "rank_hi"]).sort_values("rank_lo")
    covered = np.concatenate([np.arange(lo, hi + 1) for lo, hi in
                              zip(spans["rank_lo"], spans["rank_hi"], strict=True)])
    np.testing.assert_array_equal(covered, np.arange(ranks))
    assert (spans["ranks"] == spans["rank_hi"] - spans["rank_lo"] + 1).all()


def test_a_thousand_ranks_by_step_are_grouped_under_the_cell_limit() -> None:
    bd = _breakdown(1024, 100)
    grid = rank_by_step(bd)
    assert len(grid) <= MAX_CELLS
    assert sorted(grid["column"].unique(), key=int) == [str(s) for s in range(36, 100)]
    _covers_every_rank_once(grid, 1024)
    first = grid[(grid["rank_lo"] == 0) & (grid["column"] == "99")].iloc[0]
    members = bd[(bd["rank"] <= first["rank_hi"]) & (bd["step"] == 99)]
    assert first["ranks"] > 1 and np.isclose(first["value"], members["step_us"].mean())


def test_buckets_are_shares_of_the_mean_step_one_row_per_rank_when_they_fit() -> None:
    grid = rank_by_bucket(_breakdown(1024, 4))
    assert len(grid) == 1024 * 2 and (grid["ranks"] == 1).all()
    slow = grid[grid["rank_lo"] == SLOW].set_index("column")["value"]
    assert np.isclose(slow["gpu_compute"], 100 * 91.5 / 111.5)
    assert np.isclose(slow["gpu_compute"] + slow["gpu_communication"], 100.0)


def test_the_outliers_are_per_rank_whatever_the_grouping() -> None:
    bd = _breakdown(1024, 100)
    table = bd.groupby("rank", as_index=False)["step_us"].median().rename(
        columns={"step_us": "step_time_us_median"})
    table.loc[table["rank"] == 700, "step_time_us_median"] += 5.0  # slightly slow
    out = rank_outliers(table)
    assert out["rank"].tolist() == [SLOW, 700]
    assert rank_outliers(table.iloc[:0]).empty
    assert rank_by_bucket(bd.iloc[:0]).empty and rank_by_step(bd.iloc[:0]).empty
