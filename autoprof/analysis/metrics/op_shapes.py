"""The input shapes of the ops table: per op the calls of each recorded ``input_dims``, and
the ``input_shapes`` text (the most common shapes, plus how many others)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import factorized, first_seen

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
    # one int per (group, dims) pair, in order of first appearance (groupby's sort=False);
    # calls and first start by numpy (counts and minima are exact)
    pairs, _, distinct = first_seen(group[shaped].astype(np.int64) * (len(dims) + 1)
                                    + code[shaped])
    first_ts = np.full(len(distinct), np.nan)
    np.fmin.at(first_ts, pairs, ts_us[shaped])
    g = distinct // (len(dims) + 1)
    return pd.DataFrame({"name": names[g], "lane": lanes[g],
                         "shapes": dims_text[distinct % (len(dims) + 1)],
                         "calls": np.bincount(pairs, minlength=len(distinct)),
                         "first_ts_us": first_ts})


def shapes_text(counts: pd.DataFrame, distinct: bool = False) -> dict[tuple[str, str], str]:
    """(name, lane) -> its most common shapes (the first seen wins a tie), plus
    `` (+N more)`` when N other distinct shapes occur; rows of one shape from several
    traces are summed first (``distinct``: ``counts`` holds each (name, lane, shapes) once,
    as one table's ``shape_counts`` does: nothing to sum).

    | name | shapes | calls |    | (name, lane) | text |
    | --- | --- | --- | --- | --- | --- |
    | aten::add | [[8], [8]] | 2 | -> | (aten::add, cpu) | [[8], [8]] (+1 more) |
    | aten::add | [[1], [1]] | 1 |    |  |  |
    """
    if counts.empty:
        return {}
    if distinct:  # one row per (name, lane, shapes) already (``shape_counts`` of one table)
        order = np.lexsort((counts["first_ts_us"].to_numpy(dtype=float),
                            -counts["calls"].to_numpy(dtype=np.int64)))
        summed = counts.iloc[order]
    else:
        summed = (counts.groupby(["name", "lane", "shapes"], sort=False)
                  .agg(calls=("calls", "sum"), first_ts_us=("first_ts_us", "min"))
                  .reset_index()
                  .sort_values(["calls", "first_ts_us"], ascending=[False, True],
                               kind="stable"))
    top: dict[tuple[str, str], str] = {}  # the first row of each (name, lane) after the sort
    seen: dict[tuple[str, str], int] = {}
    for name, lane, shapes in zip(summed["name"].tolist(), summed["lane"].tolist(),
                                  summed["shapes"].tolist(), strict=True):
        if pd.isna(name) or pd.isna(lane):
            continue  # as groupby leaves NA keys out
        key = (str(name), str(lane))
        top.setdefault(key, str(shapes))
        seen[key] = seen.get(key, 0) + 1
    return {key: text + (f" (+{seen[key] - 1} more)" if seen[key] > 1 else "")
            for key, text in top.items()}
