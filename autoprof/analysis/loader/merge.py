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
    ordered = _one_rank_each(frames)
    if ordered is not None:
        return _concat_in_order(ordered)
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


def _one_rank_each(frames: list[pd.DataFrame]) -> list[pd.DataFrame] | None:
    """The frames in rank order when each holds one rank, sorted by ts_us, and no two share
    a rank (one trace per rank, as the loader reads a run): their concatenation in that order
    is then already sorted by (rank, ts_us). None otherwise."""
    keyed = []
    for frame in frames:
        ranks, ts = frame["rank"].to_numpy(), frame["ts_us"].to_numpy()
        if not len(ranks) or (ranks != ranks[0]).any() or (ts[1:] < ts[:-1]).any():
            return None
        keyed.append((int(ranks[0]), frame))
    keyed.sort(key=lambda kv: kv[0])
    if any(a[0] == b[0] for a, b in zip(keyed, keyed[1:], strict=False)):
        return None
    return [frame for _, frame in keyed]


def _concat_in_order(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One concatenation: each text column recoded once onto the sorted union of the frames'
    categories (a small array per frame, not a string per row), references shifted by each
    frame's offset; no copy of each frame beforehand, no sort after."""
    offsets = np.cumsum([0] + [len(f) for f in frames[:-1]])
    columns: dict[str, object] = {}
    for col in frames[0].columns:
        if col in _text_columns(frames[0]):
            columns[col] = _shared_categorical([f[col] for f in frames])
        elif col in ROW_COLUMNS:
            columns[col] = np.concatenate([np.where(v >= 0, v + off, -1) for v, off in zip(
                (f[col].to_numpy() for f in frames), offsets, strict=True)])
        else:
            columns[col] = np.concatenate([f[col].to_numpy() for f in frames])
    return pd.DataFrame(columns)


def _shared_categorical(parts: list[pd.Series]) -> pd.Categorical:
    """The parts as one categorical over the sorted union of their categories."""
    cats = [p.cat.categories for p in parts]
    union = cats[0]
    for other in cats[1:]:
        if not union.equals(other):
            union = union.union(other)  # sorted, like each table's own categories
    codes = []
    for part, own in zip(parts, cats, strict=True):
        raw = part.cat.codes.to_numpy()
        if own.equals(union):
            codes.append(raw)
        else:
            remap = union.get_indexer(own).astype(raw.dtype)
            codes.append(np.where(raw >= 0, remap[np.maximum(raw, 0)], -1))
    return pd.Categorical.from_codes(np.concatenate(codes), categories=union)


def _text_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]
