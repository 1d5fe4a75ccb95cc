"""Who made each memory event: the step, the innermost region and the innermost CPU op open
at its timestamp (metrics/memory_use.py builds the tables from these).

An allocation is tied to the innermost ``cpu_op`` and the innermost region
(``record_function``, a ``user_annotation``) open on the same thread at its timestamp; one on a
thread with no open region (the autograd engine's, during ``backward()``) goes to the innermost
region open at that time on another thread of the process.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from autoprof.analysis.loader.vocabulary import STEP_NAME
from autoprof.analysis.metrics.stats import cpu_mask, isin_mask, name_matches

NO_REGION = "(no region)"
NO_OP = "(no op)"
IntArray = npt.NDArray[np.int64]


def step_of(mem: pd.DataFrame, spans: pd.DataFrame) -> IntArray:
    """The ProfilerStep#N span (same rank) that contains each memory event, else -1."""
    out = np.full(len(mem), -1, dtype=np.int64)
    for rank, group in spans.groupby("rank", sort=False):
        rows = np.flatnonzero(mem["rank"].to_numpy() == rank)
        starts = group["ts_us"].to_numpy(float)
        ends = group["end_us"].to_numpy(float)
        ts = mem["ts_us"].to_numpy(float)[rows]
        idx = np.searchsorted(starts, ts, side="right") - 1
        ok = (idx >= 0) & (ts <= ends[np.maximum(idx, 0)])
        out[rows[ok]] = group["step_no"].to_numpy(np.int64)[idx[ok]]
    return out


def _containing(cand: IntArray, q: npt.NDArray[np.float64], parent: IntArray,
                end: npt.NDArray[np.float64], want: npt.NDArray[np.bool_]) -> IntArray:
    """For each query, the nearest of ``cand`` and its ancestors that is ``want`` and still
    open at ``q`` (rows start at or before ``q`` by construction), else -1."""
    out = np.full(len(cand), -1, dtype=np.int64)
    pending = np.flatnonzero(cand >= 0)
    cur = cand[pending]
    while len(pending):
        hit = want[cur] & (end[cur] >= q[pending])
        out[pending[hit]] = cur[hit]
        pending, cur = pending[~hit], parent[cur[~hit]]
        live = cur >= 0
        pending, cur = pending[live], cur[live]
    return out


def _last_started(rows: IntArray, ts: npt.NDArray[np.float64], q: npt.NDArray[np.float64]
                  ) -> IntArray:
    """For each query time, the last of ``rows`` (sorted by ts) that started at or before it."""
    if not len(rows):
        return np.full(len(q), -1, dtype=np.int64)
    idx = np.searchsorted(ts[rows], q, side="right") - 1
    return np.where(idx >= 0, rows[np.maximum(idx, 0)], -1)


def _thread_candidates(events: pd.DataFrame, mem: pd.DataFrame
                       ) -> list[tuple[IntArray, IntArray]]:
    """Per thread of the memory events: (their rows, the last CPU row of that thread started
    at or before each)."""
    ts = events["ts_us"].to_numpy(float)
    q = mem["ts_us"].to_numpy(float)
    thread = ["rank", "pid", "tid"]
    threads = _rows_by(events, cpu_mask(events), thread)
    return [(m, _last_started(threads.get(key, _NONE), ts, q[m]))
            for key, m in mem.groupby(thread, sort=False).indices.items()]


def region_of(events: pd.DataFrame, mem: pd.DataFrame) -> npt.NDArray[np.object_]:
    """The innermost region of each memory event: on its thread, else on another thread of
    its process (see the module doc)."""
    is_region = region_mask(events)
    parent = events["parent"].to_numpy(np.int64)
    end = events["end_us"].to_numpy(float)
    ts = events["ts_us"].to_numpy(float)
    q = mem["ts_us"].to_numpy(float)
    region = np.full(len(mem), -1, dtype=np.int64)
    for m, cand in _thread_candidates(events, mem):
        region[m] = _containing(cand, q[m], parent, end, is_region)
    process = ["rank", "pid"]  # other threads' open regions
    regions = _rows_by(events, is_region, process)
    for key, m in mem.groupby(process, sort=False).indices.items():
        m = m[region[m] < 0]
        rows = regions.get(key, _NONE)
        if len(m) and len(rows):
            cand = _last_started(rows, ts, q[m])
            region[m] = _containing(cand, q[m], parent, end, is_region)
    return _labels(events["name"], region, NO_REGION)


def op_of(events: pd.DataFrame, mem: pd.DataFrame) -> npt.NDArray[np.object_]:
    """The innermost CPU op (``cpu_op``) open on each memory event's thread."""
    is_op = cpu_mask(events) & isin_mask(events["cat"], ("cpu_op",))
    parent = events["parent"].to_numpy(np.int64)
    end = events["end_us"].to_numpy(float)
    q = mem["ts_us"].to_numpy(float)
    op = np.full(len(mem), -1, dtype=np.int64)
    for m, cand in _thread_candidates(events, mem):
        op[m] = _containing(cand, q[m], parent, end, is_op)
    return _labels(events["name"], op, NO_OP)


_NONE = np.empty(0, dtype=np.int64)


def _rows_by(events: pd.DataFrame, mask: npt.NDArray[np.bool_], keys: list[str]
             ) -> dict[Any, IntArray]:
    """Rows of ``events`` under ``mask``, in table order, grouped by the ``keys`` columns."""
    rows = np.flatnonzero(mask)
    picked = pd.DataFrame({k: events[k].to_numpy()[rows] for k in keys})
    return {k: rows[v] for k, v in picked.groupby(keys, sort=False).indices.items()}


def region_mask(events: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """CPU ``user_annotation`` rows (``record_function``) other than ``ProfilerStep#N``."""
    return np.asarray((cpu_mask(events) & isin_mask(events["cat"], ("user_annotation",))
            & ~name_matches(events["name"], STEP_NAME)), dtype=bool)


def _labels(names: pd.Series, rows: IntArray, missing: str) -> npt.NDArray[np.object_]:
    """The name at each row (``missing`` for -1), through the categories when it has them."""
    found = rows >= 0
    out = np.full(len(rows), missing, dtype=object)
    if isinstance(names.dtype, pd.CategoricalDtype):
        codes = names.cat.codes.to_numpy()[rows[found]]
        texts = np.array([str(c) for c in names.cat.categories] + [missing], dtype=object)
        out[found] = texts[codes]  # code -1 (a missing name) reads the last entry
    else:
        out[found] = names.to_numpy(object)[rows[found]].astype(str)
    return out
