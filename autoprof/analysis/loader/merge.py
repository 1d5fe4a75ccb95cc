"""Concatenating per-trace event tables into one, sorted by (rank, ts_us).

Row-reference columns (``parent``, ``launch_row``, ``op_row``) hold row positions; they are
shifted by each table's offset and then renumbered after the final sort.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ROW_COLUMNS = ("parent", "launch_row", "op_row")


def combine(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One events table from several, sorted by (rank, ts_us) with references remapped."""
    if len(frames) == 1:
        frame = frames[0]
        ranks = frame["rank"].to_numpy()
        if len(ranks) < 2 or (ranks[1:] >= ranks[:-1]).all():
            return frame.reset_index(drop=True)
    shifted = []
    offset = 0
    for frame in frames:
        frame = frame.copy()
        for col in ROW_COLUMNS:
            values = frame[col].to_numpy()
            frame[col] = np.where(values >= 0, values + offset, -1)
        shifted.append(frame)
        offset += len(frame)
    merged = pd.concat(shifted, ignore_index=True)
    for col in _text_columns(frames[0]):  # tables with other categories concat as strings
        if not isinstance(merged[col].dtype, pd.CategoricalDtype):
            merged[col] = merged[col].astype("category")  # categories sorted, as each table's
    order = np.lexsort((merged["ts_us"].to_numpy(), merged["rank"].to_numpy()))
    new_pos = np.empty(len(order), dtype=np.int64)
    new_pos[order] = np.arange(len(order))
    merged = merged.iloc[order].reset_index(drop=True)
    for col in ROW_COLUMNS:
        values = merged[col].to_numpy()
        merged[col] = np.where(values >= 0, new_pos[np.maximum(values, 0)], -1)
    return merged


def _text_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]
