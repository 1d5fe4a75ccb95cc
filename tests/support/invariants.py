"""Invariants every events table must satisfy (shared by the loader tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.loader.events import COLUMNS, TEXT_COLUMNS
from autoprof.analysis.loader.nesting import EPS_US

INT_COLUMNS = ("pid", "tid", "device", "stream", "depth", "parent", "step", "correlation",
               "external_id", "launch_row", "op_row", "rank")
FLOAT_COLUMNS = ("ts_us", "dur_us", "end_us", "self_us", "flops")


def check_events(events: pd.DataFrame) -> None:
    assert tuple(events.columns) == COLUMNS
    for col in INT_COLUMNS:
        assert events[col].dtype == np.int64, col
    for col in FLOAT_COLUMNS:
        assert events[col].dtype == np.float64, col
    assert events["is_gpu_work"].dtype == bool
    for col in TEXT_COLUMNS:
        dtype = events[col].dtype
        assert isinstance(dtype, pd.CategoricalDtype), (col, dtype)
        categories = list(dtype.categories)
        assert all(isinstance(c, str) for c in categories), col
        assert categories == sorted(set(categories)), col  # distinct, sorted
        used = set(events[col].cat.codes.unique().tolist())
        assert used == set(range(len(categories))), col  # every category occurs
        assert not events[col].isna().any(), col
    n = len(events)
    if n == 0:
        return
    ts = events["ts_us"].to_numpy()
    dur = events["dur_us"].to_numpy()
    rank = events["rank"].to_numpy()
    assert np.isfinite(ts).all() and np.isfinite(dur).all()
    assert (dur >= 0).all()
    # sorted by (rank, ts)
    assert (np.diff(rank) >= 0).all()
    same = rank[1:] == rank[:-1]
    assert (np.diff(ts)[same] >= 0).all()
    self_us = events["self_us"].to_numpy()
    assert (self_us >= 0).all() and (self_us <= dur + 1e-9).all()
    assert set(events["lane"].unique()) <= {"cpu", "gpu"}
    gpu = (events["lane"] == "gpu").to_numpy()
    work = events["is_gpu_work"].to_numpy()
    assert not (work & ~gpu).any()
    annotation = (events["cat"] == "gpu_user_annotation").to_numpy()
    assert not work[annotation].any() and (self_us[annotation] == 0).all()
    # parents: same rank/pid/tid, start no later, still open at the child's start
    parent = events["parent"].to_numpy()
    depth = events["depth"].to_numpy()
    kids = np.flatnonzero(parent >= 0)
    mom = parent[kids]
    assert (mom >= 0).all() and (mom < n).all()
    for col in ("pid", "tid", "rank", "lane"):
        values = events[col].to_numpy()
        assert (values[kids] == values[mom]).all(), col
    assert (ts[mom] <= ts[kids] + EPS_US).all()
    assert (ts[mom] + dur[mom] > ts[kids]).all()
    assert (depth[kids] == depth[mom] + 1).all()
    assert (depth[parent < 0] == 0).all()
    # launches: GPU rows point at a CPU runtime row with the same correlation
    launch = events["launch_row"].to_numpy()
    linked = np.flatnonzero(launch >= 0)
    assert gpu[linked].all()
    assert not gpu[launch[linked]].any()
    corr = events["correlation"].to_numpy()
    assert (corr[linked] == corr[launch[linked]]).all()
    op = events["op_row"].to_numpy()
    has_op = np.flatnonzero(op >= 0)
    assert (launch[has_op] >= 0).all()
    assert (events["cat"].to_numpy()[op[has_op]] == "cpu_op").all()
    step = events["step"].to_numpy()
    assert (step[linked] == step[launch[linked]]).all()
