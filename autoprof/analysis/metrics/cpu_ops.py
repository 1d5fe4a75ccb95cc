"""Numbers about the ops of CPU steps: per-step op tables, short ops, matrix-product throughput.

The CPU findings (diagnose/cpu_checks.py, threads.py, cold_start.py) and the CPU bounds
(diagnose/cpu_bounds.py) read these; each is a share or a rate a test can recompute from the
raw rows. ``ops`` below means ``cpu_op`` rows inside profiler steps, autoprof's own left out.

``per_step_ops`` (one row per rank, step and op name):

| rank | step | name | calls | self_us | dur_us |
| --- | --- | --- | --- | --- | --- |
| 0 | 2 | aten::mm | 12 | 26510.2 | 26510.2 |
| 0 | 2 | aten::add | 24 | 310.7 | 330.1 |
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from autoprof.analysis.metrics._tree import has_ancestor_in, parent_positions
from autoprof.analysis.metrics.flops import op_costs
from autoprof.analysis.metrics.stats import isin_mask, require_columns, text_of
from autoprof.analysis.metrics.sync import autoprof_mask

# an op this short is mostly the framework's per-op cost (dispatch, checks, allocation):
# a few microseconds per op even for one element on a fast CPU
SHORT_OP_US = 20.0
# the leaf matrix products (matmul and linear call these: counting both would count twice)
MATRIX_LEAVES = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
MATRIX_MIN_FLOPS = 1e5  # smaller products are mostly per-call cost, not arithmetic

PER_STEP_COLUMNS = ("rank", "step", "name", "calls", "self_us", "dur_us")


def _op_mask(events: pd.DataFrame) -> np.ndarray:
    require_columns(events, ("name", "cat", "step", "parent", "self_us", "dur_us", "rank"),
                    "CPU op metrics")
    mask: np.ndarray = isin_mask(events["cat"], ("cpu_op",)) & (
        events["step"].to_numpy() >= 0) & ~autoprof_mask(events)
    return mask


def _in_steps(events: pd.DataFrame, steps: pd.DataFrame) -> np.ndarray:
    """Mask of the rows whose (rank, step) is a row of ``steps``."""
    keys = set(zip(steps["rank"].astype(int), steps["step"].astype(int), strict=True))
    pairs = zip(events["rank"].to_numpy().tolist(), events["step"].to_numpy().tolist(),
                strict=True)
    return np.fromiter((p in keys for p in pairs), bool, len(events))


def outermost_ops(events: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """The ops of ``steps`` (rows with rank, step) that no other op encloses."""
    ops = _op_mask(events)
    outer = ops & ~has_ancestor_in(parent_positions(events), ops) & _in_steps(events, steps)
    return events.loc[outer, ["name", "ts_us", "dur_us", "self_us", "step", "rank"]]


def short_ops_pct(events: pd.DataFrame, steps: pd.DataFrame, step_us: Iterable[float]) -> float:
    """Share (%) of the steps' time inside outermost ops shorter than ``SHORT_OP_US``."""
    total_us = float(sum(step_us))
    if not total_us > 0:
        return 0.0
    ops = outermost_ops(events, steps)
    return 100.0 * float(ops.loc[ops["dur_us"] < SHORT_OP_US, "dur_us"].sum()) / total_us


def per_step_ops(events: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Calls, self time and total time of each op name in each step of ``steps``."""
    rows = events[_op_mask(events) & _in_steps(events, steps)]
    if rows.empty:
        return pd.DataFrame(columns=list(PER_STEP_COLUMNS))
    grouped = rows.groupby([rows["rank"].to_numpy(), rows["step"].to_numpy(),
                            text_of(rows["name"])])
    out = grouped.agg(calls=("dur_us", "size"), self_us=("self_us", "sum"),
                      dur_us=("dur_us", "sum"))
    out.index = out.index.set_names(["rank", "step", "name"])
    return out.reset_index()[list(PER_STEP_COLUMNS)]


def heavy_ops(events: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Self time per step (``self_us_per_step``) of each op over ``steps``, heaviest first."""
    table = per_step_ops(events, steps)
    if table.empty:
        return pd.DataFrame({"name": pd.Series(dtype=str),
                             "self_us_per_step": pd.Series(dtype=float)})
    per = table.groupby("name")["self_us"].sum() / max(len(steps), 1)
    per = per.sort_values(ascending=False, kind="stable")
    return pd.DataFrame({"name": per.index.astype(str), "self_us_per_step": per.to_numpy()})


def matrix_calls(events: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """The leaf matrix products of ``steps`` of at least ``MATRIX_MIN_FLOPS`` (FLOPs from
    their shapes), with ``flops``, ``dur_us`` and ``gflops`` (per second) of each call."""
    mask = _op_mask(events) & _in_steps(events, steps) & isin_mask(events["name"], MATRIX_LEAVES)
    rows = events[mask]
    flops = op_costs(rows)["flops"].to_numpy(float) if len(rows) else np.zeros(0)
    dur_us = rows["dur_us"].to_numpy(float)
    keep = np.isfinite(flops) & (flops >= MATRIX_MIN_FLOPS) & (dur_us > 0)
    return pd.DataFrame({"name": rows["name"].astype(str).to_numpy()[keep],
                         "flops": flops[keep], "dur_us": dur_us[keep],
                         "gflops": flops[keep] / dur_us[keep] / 1e3})
