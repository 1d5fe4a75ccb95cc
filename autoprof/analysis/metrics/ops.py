"""Self vs total per op: torch's ``key_averages()`` numbers, computed from the events table.

One row per op name and lane. CPU rows (``lane == "cpu"``: ``cpu_op``, ``user_annotation``,
runtime/driver calls, ``python_function`` when ``with_stack`` was on) carry CPU time and the
device time of the kernels they launched; GPU rows (kernels, memcpy, memset) carry their own
device time. ``gpu_user_annotation`` spans are never rows and never add device time.

Example (a ``matmul_add`` record_function around ``aten::mm``, which launches one kernel)::

    events (before)
    name        lane  dur_us  parent  op_row
    matmul_add  cpu     10.0      -1      -1
    aten::mm    cpu      4.0       0      -1
    gemm        gpu      2.0      -1       1

    self_vs_total (after; every time column is in microseconds)
    name        lane  calls  self_cpu_us  cpu_total_us  self_device_us  device_total_us
    matmul_add  cpu       1          6.0          10.0             0.0              2.0
    aten::mm    cpu       1          4.0           4.0             2.0              2.0
    gemm        gpu       1          0.0           0.0             2.0              2.0

Rules, each matching torch's ``FunctionEvent`` / ``FunctionEventAvg``:

- ``calls``: number of events with that name; ``cpu_total_us``: the sum of their durations.
  An op nested in itself (recursion) is counted once per event, so its CPU total can exceed
  the wall time it covers (torch does the same). Except: an op that is the *only* child of an
  op with the same name (``aten::sum`` calling the ``aten::sum`` overload that does the work)
  is folded into its parent, as torch's ``_remove_dup_nodes`` does: not counted, its children
  and kernels become the parent's. (torch then drops kernels the parent launched itself; we
  keep them, a case we have not seen in a real trace.)
- ``self_cpu_us``: duration minus the durations of direct CPU children, where children are
  taken among the rows that are ops (the ``Trace`` event and torch's filtered utility names
  are skipped, and their children move up to the nearest op). As in torch, an event that
  ends after the event it started in is not that event's child but its parent's; with
  ``with_stack=True`` such overlaps between Python frames make torch's Self CPU negative
  for a few frames, and ours too (the events table's ``self_us`` is clipped instead).
- A kernel's time is Self device of the kernel row and of the op that launched it
  (``op_row``; else the nearest op enclosing its launch call), and device total of that op
  and every op above it. Recursion double counts here too, as in torch.
- ``ProfilerStep#N`` rows are merged into ``ProfilerStep*``, as torch prints them.
- ``flops``: the sum over the events of ``flops``; where a trace has no ``args.flops`` (torch
  2.x exports none, even with ``with_flops=True``), torch's own formulas estimate it from
  ``input_dims`` for ``aten::mm``, ``addmm``, ``bmm``, ``baddbmm``, ``mul`` and ``add``
  (``aten::conv2d`` needs stride and padding, which the trace lacks). NaN if neither.
- ``input_shapes``: the most common non-empty ``input_dims`` of that name (first seen wins
  a tie), followed by `` (+N more)`` when its calls had N other distinct shapes; torch keeps
  shapes only when grouping by them, we keep one row per name.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import EPS_US, NOT_CPU_WORK_CATS
from autoprof.analysis.metrics.op_shapes import SHAPE_COLUMNS, shape_counts, shapes_text
from autoprof.analysis.metrics.recorded_flops import event_flops
from autoprof.analysis.metrics.stats import factorized, first_seen, isin_mask, require_columns

Lane = Literal["cpu", "gpu"]

OPS_COLUMNS = [
    "name",
    "lane",
    "calls",
    "self_cpu_us",
    "cpu_total_us",
    "self_device_us",
    "device_total_us",
    "flops",
    "input_shapes",
]

_REQUIRED = (
    "name",
    "cat",
    "lane",
    "is_gpu_work",
    "ts_us",
    "dur_us",
    "parent",
    "launch_row",
    "op_row",
    "flops",
    "input_dims",
    "rank",
    "pid",
    "tid",
)
_TIMES = ("self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us")
# torch.autograd.profiler_util._filter_name: utility ops torch drops from its tables.
_TORCH_FILTERED_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)


def self_vs_total(
    events: pd.DataFrame, lane: Lane | None = None, rank: int | None = None
) -> pd.DataFrame:
    """Per-op Self and total CPU and device time (columns: ``OPS_COLUMNS``).

    ``lane`` keeps only CPU rows or only GPU rows; ``rank`` keeps one rank (default: all
    ranks summed). Rows come in order of first appearance, so a stable sort on any column
    reproduces torch's order among ties.
    """
    return ops_and_shapes(events, lane, rank)[0]


def ops_and_shapes(
    events: pd.DataFrame, lane: Lane | None = None, rank: int | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``self_vs_total``'s table, and how many calls of each row had each input shape
    (``SHAPE_COLUMNS``: name, lane, shapes, calls, first_ts_us), so that the shapes of
    several traces can be summed exactly (``shapes_text``)."""
    require_columns(events, _REQUIRED, "self vs total")
    if lane not in (None, "cpu", "gpu"):
        raise ValueError(f"lane must be 'cpu', 'gpu' or None, got {lane!r}")
    key, key_names = op_keys(events)
    per_event = event_times(events, key)
    keep = per_event["is_op"] | per_event["is_work"]
    if rank is not None:
        keep &= (events["rank"] == rank).to_numpy(dtype=bool)
    if lane is not None:
        keep &= isin_mask(events["lane"], (lane,))
    return _aggregate(events, per_event, keep, key, key_names)


def op_keys(events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(key code per event, key names): torch's key is the name, with ``ProfilerStep#N``
    written ``ProfilerStep*`` (torch's ``_rewrite_name``)."""
    codes, names = factorized(events["name"])  # NA is a name of its own here ...
    text = pd.Series(names, dtype=object).fillna("")  # ... written "" (as fillna("") would)
    text = text.mask(text.str.startswith("ProfilerStep#").astype(bool), "ProfilerStep*")
    key_codes, key_names = pd.factorize(text, sort=False)
    return key_codes[codes].astype(np.int64), np.asarray(key_names, dtype=object)


def event_times(events: pd.DataFrame, key: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-event arrays (positions as in ``events``): ``is_op``, ``is_work``, ``self_cpu_us``,
    ``cpu_total_us``, ``self_device_us``, ``device_total_us``."""
    require_columns(events, _REQUIRED, "self vs total")
    if key is None:
        key = op_keys(events)[0]
    n = len(events)
    is_work = events["is_gpu_work"].to_numpy(dtype=bool)
    is_op = (
        isin_mask(events["lane"], ("cpu",))
        & ~is_work
        & ~isin_mask(events["cat"], NOT_CPU_WORK_CATS)
        & ~isin_mask(events["name"], _TORCH_FILTERED_NAMES)
    )
    dur = events["dur_us"].to_numpy(dtype=np.float64)
    ts = events["ts_us"].to_numpy(dtype=np.float64)
    parent = _enclosing_parent(_positions(events, "parent"), ts + dur)
    parent = _adopt_profiler_overhead(events, parent, is_op, ts, ts + dur)
    is_op &= ~_merged_into_parent(key, parent, is_op)
    up = _nearest_op_above(parent, is_op)
    del parent  # each array freed once used: the table's peak is a few per-event arrays

    owner = _launching_op(events, is_op, up)
    work = is_work & (owner >= 0)
    # the subtree sums first, while few arrays are held; a work row's own time added after
    # (x + y == y + x exactly)
    device_total = _subtree_sums(up, np.bincount(owner[work], weights=dur[work], minlength=n))
    self_device = np.where(is_work, dur, 0.0)
    device_total += self_device
    np.add.at(self_device, owner[work], dur[work])
    del owner, work

    cpu_total = np.where(is_op, dur, 0.0)
    child = is_op & (up >= 0)
    children_us = np.bincount(up[child], weights=dur[child], minlength=n)
    self_cpu = np.where(is_op, dur - children_us, 0.0)
    return {
        "is_op": is_op,
        "is_work": is_work,
        "self_cpu_us": self_cpu,
        "cpu_total_us": cpu_total,
        "self_device_us": self_device,
        "device_total_us": device_total,
    }


def _positions(events: pd.DataFrame, column: str) -> np.ndarray:
    """Row references (index labels or -1) as positions into ``events`` (-1 if absent)."""
    refs = events[column].to_numpy(dtype=np.int64)
    index = events.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return np.where((refs >= 0) & (refs < len(events)), refs, -1)
    pos = index.get_indexer(refs)
    return np.where(refs >= 0, pos, -1).astype(np.int64)


def _enclosing_parent(parent: np.ndarray, end_us: np.ndarray) -> np.ndarray:
    """torch's rule: an event that ends after its parent (a partial overlap, seen between
    ``python_function`` events and record_function spans) is a child of the nearest
    ancestor that still encloses it. The events table keeps it under the parent it started
    in; ``EPS_US`` absorbs Kineto's separate rounding of ``ts`` and ``dur`` to 1 ns."""
    up = parent.copy()
    for _ in range(len(up) + 1):
        crossed = (up >= 0) & (end_us[np.maximum(up, 0)] + EPS_US < end_us)
        if not crossed.any():
            return up
        up[crossed] = parent[up[crossed]]
    raise ValueError("events table: the parent column has a cycle")


def _adopt_profiler_overhead(
    events: pd.DataFrame,
    parent: np.ndarray,
    is_op: np.ndarray,
    ts_us: np.ndarray,
    end_us: np.ndarray,
) -> np.ndarray:
    """CUPTI's own work (``cat == "overhead"``, e.g. ``Activity Buffer Request``) is written
    on a process of its own (pid -1), but torch's tree puts it on the process's main thread
    (seen on an H200: even while that thread waited for autograd's thread), as a child of
    the op running there. Give it the innermost op of the same rank's main thread (tid ==
    pid on Linux) that encloses it, so that op's Self CPU excludes the profiler's overhead
    and the overhead is its own row, as in torch's table."""
    overhead = isin_mask(events["cat"], ("overhead",))
    orphans = np.flatnonzero(is_op & (parent < 0) & overhead)
    if len(orphans) == 0:
        return parent
    parent = parent.copy()
    rank = events["rank"].to_numpy()
    main_thread_op = is_op & ~overhead & (events["tid"] == events["pid"]).to_numpy(dtype=bool)
    for row in orphans:
        around = (
            main_thread_op
            & (rank == rank[row])
            & (ts_us <= ts_us[row] + EPS_US)
            & (end_us + EPS_US >= end_us[row])
        )
        if around.any():
            candidates = np.flatnonzero(around)
            parent[row] = candidates[np.argmax(ts_us[candidates])]  # the latest to start
    return parent


def _nearest_op_above(parent: np.ndarray, is_op: np.ndarray) -> np.ndarray:
    """For every row, the position of the nearest ancestor that is an op (-1 if none).

    Pointer doubling: ``jump[v]`` starts at v's parent (v itself for an op, ``n`` for none)
    and becomes ``jump[jump[v]]`` until it stops changing, at the op at or above v, in
    log2(depth) passes: a chain of 100,000 nested non-op rows (same-name ops merged into
    their parent) costs 17 passes, not 100,000."""
    n = len(parent)
    fixed = np.append(is_op, True)  # ops, and the sentinel n that stands for "none"
    jump = np.append(np.where(parent >= 0, parent, n), n)
    jump[fixed] = np.flatnonzero(fixed)
    for _ in range(n.bit_length() + 2):
        nxt = jump[jump]
        if np.array_equal(nxt, jump):
            break
        jump = nxt
    if not fixed[jump].all():
        raise ValueError("events table: the parent column has a cycle")
    up = jump[np.where(parent >= 0, parent, n)]
    return np.where(up == n, -1, up)


def _subtree_sums(up: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Per row, ``own`` summed over the row and every row below it in the ``up`` tree (each
    kernel counts once in every op that encloses it): one pass per level, deepest first, so
    the work is linear in the rows however deep they nest."""
    depth = _depths(up)
    total = own.astype(np.float64, copy=True)
    below = np.flatnonzero(up >= 0)
    if len(below) == 0:
        return total
    deepest_first = -depth[below]
    if len(deepest_first) and int(depth.max()) < 2**15:
        deepest_first = deepest_first.astype(np.int16)  # a stable radix sort of 16-bit keys
    by_level = below[np.argsort(deepest_first, kind="stable")]
    del deepest_first
    del below
    levels = depth[by_level]
    del depth
    starts = np.flatnonzero(np.r_[True, levels[1:] != levels[:-1]])
    for first, last in zip(starts, np.r_[starts[1:], len(levels)], strict=True):
        rows = by_level[first:last]
        np.add.at(total, up[rows], total[rows])
    return total


def _depths(up: np.ndarray) -> np.ndarray:
    """Per row, how many ``up`` steps lead to a root (list ranking by pointer doubling)."""
    n = len(up)
    jump = np.append(np.where(up >= 0, up, n), n)
    dist = np.append((up >= 0).astype(np.int64), 0)
    for _ in range(n.bit_length() + 2):
        if (jump == n).all():
            return dist[:n]
        dist = dist + dist[jump]
        jump = jump[jump]
    raise ValueError("events table: the parent column has a cycle")


def _merged_into_parent(key: np.ndarray, parent: np.ndarray, is_op: np.ndarray) -> np.ndarray:
    """torch's EventList._remove_dup_nodes: an op that is the only child of a same-name op
    is folded into it (its children and kernels move up, it is not counted)."""
    up = _nearest_op_above(parent, is_op)
    has_up = is_op & (up >= 0)
    children = np.bincount(up[has_up], minlength=len(up))
    merged = np.zeros(len(up), dtype=bool)
    merged[has_up] = (key[up[has_up]] == key[has_up]) & (children[up[has_up]] == 1)
    return merged


def _launching_op(events: pd.DataFrame, is_op: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Per row, the op a GPU row is charged to: ``op_row``, else the op around its launch."""
    op = _positions(events, "op_row")
    op = np.where((op >= 0) & ~is_op[np.maximum(op, 0)], up[np.maximum(op, 0)], op)
    launch = _positions(events, "launch_row")
    by_launch = np.where(launch >= 0, up[np.maximum(launch, 0)], -1)
    return np.where(op >= 0, op, by_launch)


def _aggregate(
    events: pd.DataFrame,
    per_event: dict[str, np.ndarray],
    keep: np.ndarray,
    key: np.ndarray,
    key_names: np.ndarray,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    if not keep.any():
        return (pd.DataFrame({c: pd.Series(dtype=_dtype(c)) for c in OPS_COLUMNS}),
                pd.DataFrame({c: pd.Series(dtype=object) for c in SHAPE_COLUMNS}))
    on_gpu = isin_mask(events["lane"], ("gpu",))[keep]
    inverse, where, groups = first_seen(key[keep] * 2 + on_gpu)
    # the times summed now and the per-event arrays (this function's to use up) freed before
    # the shapes are counted: never all held together
    sums = {c: np.bincount(inverse, weights=per_event[c][keep]) for c in _TIMES}
    per_event.clear()
    ts = events["ts_us"].to_numpy(dtype=np.float64)[keep]
    first_ts = np.full(len(groups), np.inf)
    np.minimum.at(first_ts, inverse, ts)
    flops = event_flops(events)[keep]
    recorded = ~np.isnan(flops)
    flops_sum = np.bincount(inverse, weights=np.where(recorded, flops, 0.0))
    names = key_names[groups // 2]
    lanes = np.where(groups % 2 == 1, "gpu", "cpu").astype(object)
    counts = shape_counts(events, keep, inverse, ts, names, lanes)
    described = shapes_text(counts, distinct=True)
    out = pd.DataFrame(
        {
            "name": names,
            "lane": lanes,
            "calls": np.bincount(inverse).astype(np.int64),
            **sums,
            "flops": np.where(np.bincount(inverse, weights=recorded) > 0, flops_sum, np.nan),
            "input_shapes": [described.get((str(n), str(la)), "")
                             for n, la in zip(names, lanes, strict=True)],
        }
    )
    # first appearance; rows that start together keep the order of their first event
    order = np.lexsort((where, first_ts))
    return out.iloc[order].reset_index(drop=True)[OPS_COLUMNS], counts


def _dtype(column: str) -> str:
    if column in ("name", "lane", "input_shapes"):
        return "object"
    return "int64" if column == "calls" else "float64"
