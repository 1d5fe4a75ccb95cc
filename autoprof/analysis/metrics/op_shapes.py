"""The input shapes of the ops table: per op the calls of each recorded ``input_dims``, and
the ``input_shapes`` text (the most common shapes, plus how many others)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import factorized

SHAPE_COLUMNS = ["name", "lane", "shapes", "calls", "first_ts_us"]


def shape_counts(events: pd.DataFrame, keep: np.ndarray, group: np.ndarray,
                  ts_us: np.ndarray, names: np.ndarray, lanes: np.ndarray) -> pd.DataFrame:
    """Per group and non-empty ``input_dims``: calls and first start (``SHAPE_COLUMNS``)."""
    # NA and "" get codes of their own, both unshaped: the same groups as fillna("") gives
    dims_code, dims = factorized(events["input_dims"])
    dims_text = pd.Series(dims, dtype=object).fillna("").to_numpy(dtype=object)
    code = dims_code[keep]
    shaped = dims_text[code] != ""
    if not shaped.any():
        return pd.DataFrame({c: pd.Series(dtype=object) for c in SHAPE_COLUMNS})
    counts = (
        pd.DataFrame({"group": group[shaped], "dims": code[shaped], "ts": ts_us[shaped]})
        .groupby(["group", "dims"], sort=False)
        .agg(calls=("ts", "size"), first_ts_us=("ts", "min"))
        .reset_index()
    )
    g = counts["group"].to_numpy()
    return pd.DataFrame({"name": names[g], "lane": lanes[g],
                         "shapes": dims_text[counts["dims"].to_numpy()],
                         "calls": counts["calls"].to_numpy(),
                         "first_ts_us": counts["first_ts_us"].to_numpy()})


def shapes_text(counts: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(name, lane) -> its most common shapes (the first seen wins a tie), plus
    `` (+N more)`` when N other distinct shapes occur; rows of one shape from several
    traces are summed first.

    | name | shapes | calls |    | (name, lane) | text |
    | --- | --- | --- | --- | --- | --- |
    | aten::add | [[8], [8]] | 2 | -> | (aten::add, cpu) | [[8], [8]] (+1 more) |
    | aten::add | [[1], [1]] | 1 |    |  |  |
    """
    if counts.empty:
        return {}
    summed = (counts.groupby(["name", "lane", "shapes"], sort=False)
              .agg(calls=("calls", "sum"), first_ts_us=("first_ts_us", "min"))
              .reset_index()
              .sort_values(["calls", "first_ts_us"], ascending=[False, True], kind="stable"))
    out: dict[tuple[str, str], str] = {}
    for (name, lane), rows in summed.groupby(["name", "lane"], sort=False):
        more = len(rows) - 1
        out[(str(name), str(lane))] = (str(rows["shapes"].iloc[0])
                                       + (f" (+{more} more)" if more else ""))
    return out
