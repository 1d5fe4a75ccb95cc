"""The ops the user called: each op that no other op encloses, with all it ran rolled up.

``h.clone()`` is one ``aten::clone`` whose copy is its child ``aten::copy_``; ``x @ w`` is one
``aten::matmul`` whose work is its ``aten::mm``; ``loss.item()`` is one ``aten::item`` whose
wait is a ``cudaStreamSynchronize`` inside it. A diff by self time names the children
(``aten::copy_``, ``aten::mm``); the user wrote the outer op, so the diff's op rows are the
outermost ops, each holding its whole time (its wall time on the host, which includes its
children and the CUDA runtime calls they made, plus the GPU work any of them launched), with
the child whose time changed most named in the row's note. Autograd's backward functions
(``autograd::engine::evaluate_function: MmBackward0``) are outermost ops of the backward pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import SCALAR_READS, SYNC_NAMES

HOST_SYNCS = SYNC_NAMES - SCALAR_READS  # the runtime calls that wait for the GPU


@dataclass(frozen=True)
class UserOpFacts:
    """One outermost op (by name) of one run, per profiled step."""

    us_per_step: float  # host wall time (children and runtime calls included) + GPU work
    calls_per_step: float
    input_shapes: str
    input_types: str
    children_us_per_step: Mapping[str, float] = field(default_factory=dict)  # self + GPU work
    syncs: frozenset[str] = frozenset()  # sync calls and scalar reads it ran (itself included)
    host_us_per_step: float = 0.0  # its host wall time alone (the GPU work apart)


def outermost_ops(events: pd.DataFrame) -> np.ndarray:
    """For each row, the row of the outermost op (``cpu_op``) enclosing it or itself; -1 for a
    row no op encloses."""
    parent = events["parent"].to_numpy(dtype=np.int64)
    is_op = (events["cat"] == "cpu_op").to_numpy()
    outer = np.where(is_op, np.arange(len(parent)), -1)
    rows = np.flatnonzero(parent >= 0)
    up = parent[rows]
    while rows.size:
        hit = is_op[up]
        outer[rows[hit]] = up[hit]
        keep = parent[up] >= 0
        rows, up = rows[keep], parent[up[keep]]
    return outer


def most_common(values: pd.Series) -> str:
    """The most common non-empty value of ``values`` as text ("" when none)."""
    values = values.astype(str)
    values = values[values != ""]
    return str(values.mode().iloc[0]) if len(values) else ""


def _children(events: pd.DataFrame, outer: np.ndarray, in_step: np.ndarray,
              names: np.ndarray, steps: int) -> dict[str, dict[str, float]]:
    """outer op name -> child name -> self host time + GPU work, per step."""
    host = np.flatnonzero(in_step & (outer >= 0) & ~events["is_gpu_work"].to_numpy())
    op_row = events["op_row"].to_numpy(dtype=np.int64)
    gpu = np.flatnonzero(in_step & events["is_gpu_work"].to_numpy() & (op_row >= 0))
    gpu = gpu[outer[op_row[gpu]] >= 0]
    frame = pd.DataFrame({
        "outer": np.concatenate([names[outer[host]], names[outer[op_row[gpu]]]]),
        "child": np.concatenate([names[host], names[op_row[gpu]]]),
        "us": np.concatenate([events["self_us"].to_numpy()[host],
                              events["dur_us"].to_numpy()[gpu]])})
    sums = frame.groupby(["outer", "child"])["us"].sum() / steps
    table: dict[str, dict[str, float]] = {}
    for (outer_name, child), us in sums.items():
        table.setdefault(str(outer_name), {})[str(child)] = float(us)
    return table


def _syncs(outer: np.ndarray, in_step: np.ndarray, names: np.ndarray) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    rows = np.flatnonzero(in_step & (outer >= 0) & np.isin(names, list(SYNC_NAMES)))
    for row in rows:
        found.setdefault(str(names[outer[row]]), set()).add(str(names[row]))
    return found


def user_op_facts(events: pd.DataFrame, steps: int) -> dict[str, UserOpFacts]:
    """Every outermost op of the profiled steps, by name (the module docstring)."""
    if events.empty:
        return {}
    outer = outermost_ops(events)
    names = events["name"].astype(str).to_numpy()
    in_step = (events["step"] >= 0).to_numpy()
    is_outer = in_step & (outer == np.arange(len(outer)))
    op_row = events["op_row"].to_numpy(dtype=np.int64)
    gpu = np.flatnonzero(in_step & events["is_gpu_work"].to_numpy() & (op_row >= 0))
    gpu = gpu[outer[op_row[gpu]] >= 0]
    gpu_us = pd.Series(events["dur_us"].to_numpy()[gpu]).groupby(
        names[outer[op_row[gpu]]]).sum()
    children = _children(events, outer, in_step, names, steps)
    syncs = _syncs(outer, in_step, names)
    tops = events[is_outer]
    facts: dict[str, UserOpFacts] = {}
    for name, rows in tops.groupby(tops["name"].astype(str), observed=True):
        key = str(name)
        facts[key] = UserOpFacts(
            (float(rows["dur_us"].sum()) + float(gpu_us.get(key, 0.0))) / steps,
            len(rows) / steps, most_common(rows["input_dims"]),
            most_common(rows["input_types"]), children.get(key, {}),
            frozenset(syncs.get(key, set())), float(rows["dur_us"].sum()) / steps)
    return facts
