"""Which FLOPs and bytes each GPU work item carries: one row per kernel, memcpy or memset
with its launching op, its share of that op's cost, its dtype and the link a copy crosses.

Each GPU work item takes the FLOPs and bytes of the op that launched it (the innermost
``cpu_op`` around the launch call, else the nearest enclosing op with a formula; see
metrics/flops.py). An op that launched several kernels shares its FLOPs and bytes among them
by duration, so they all show the op's rate:

| kernel | op | dur_us | flops | tflops |
| --- | --- | --- | --- | --- |
| nchwToNhwc | aten::cudnn_convolution | 10 | 1e9 | 100 |
| fprop_implicit_gemm | aten::cudnn_convolution | 90 | 9e9 | 100 |

A memcpy or memset that carries its own byte count (Kineto's ``args.bytes``, the ``bytes``
column) takes those bytes instead of a share of its op's; a device-to-device copy reads and
writes each of them, so it moves twice its count (as a ``copy_`` op's shapes say). Copies
between host and device (HtoD, DtoH: over PCIe or the host link) are bounded by that link,
not by HBM: their ``link`` is ``host link``; so are copies between devices (PtoP: NVLink or
PCIe), ``peer link``. metrics/efficiency.py turns the table into rates against the roof.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.flops import has_rule, op_costs
from autoprof.analysis.metrics.stats import factorized

_TF32_KERNEL = re.compile(r"tf32|xf32", re.IGNORECASE)
_LAYOUT_KERNEL = re.compile(r"nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw", re.IGNORECASE)
_DEVICE_COPY = re.compile(r"\bDtoD\b", re.IGNORECASE)
_HOST_COPY = re.compile(r"\b(HtoD|DtoH|HtoH)\b|Pageable|Pinned", re.IGNORECASE)
_PEER_COPY = re.compile(r"\bPtoP\b", re.IGNORECASE)
HOST_LINK = "host link"  # ``bound`` of a copy between host and device memory
PEER_LINK = "peer link"  # ``bound`` of a copy between two devices
_COST_COLUMNS = ["name", "input_dims", "input_types", "input_values", "flops"]  # op_costs reads


def cost_rows(events: pd.DataFrame, op_row: np.ndarray) -> np.ndarray:
    """For each launching op row, the row whose cost counts: the op itself when flops.py has
    a formula for it, else its nearest enclosing cpu_op that has one (-1 if none). Every
    row climbs its parents at once, one level per pass (as many passes as ops nest)."""
    name_code, names = factorized(events["name"])
    cat_code, cats = factorized(events["cat"])
    ruled = np.array([has_rule(str(n)) for n in names], dtype=bool)[name_code]
    is_op = (cats == "cpu_op")[cat_code]
    parent = events["parent"].to_numpy(dtype=np.int64)
    row = np.asarray(op_row, dtype=np.int64).copy()
    climbing = np.flatnonzero(row >= 0)
    while len(climbing):
        at = row[climbing]
        climbing = climbing[is_op[at] & ~ruled[at]]
        row[climbing] = parent[row[climbing]]
        climbing = climbing[row[climbing] >= 0]
    found = row >= 0
    found[found] = is_op[row[found]]
    return np.where(found, row, -1)


def _distinct_costs(ops: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """``op_costs(ops)`` computed on one row per distinct value of the columns it reads
    (name, input dims, types, values, flops: by their codes, no text built per row): the
    distinct rows' costs, and for each row of ``ops`` the position of its own among them
    (the costs are read through it, never spread into a table as long as ``ops``)."""
    keys = [factorized(ops[c])[0] for c in ("name", "input_dims", "input_types",
                                            "input_values") if c in ops]
    keys.append(pd.factorize(ops["flops"].to_numpy(dtype=float), use_na_sentinel=False)[0])
    combined = np.zeros(len(ops), dtype=np.int64)
    for key in keys:  # one code per distinct tuple of keys, kept under len(ops)
        combined = pd.factorize(combined * (int(key.max()) + 1) + key)[0]
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return op_costs(ops.iloc[first]), inverse.reshape(-1)


def _flags(codes: np.ndarray, uniques: np.ndarray, pattern: re.Pattern[str]) -> np.ndarray:
    """``pattern.search`` over a text column given as its codes and distinct values, once
    per distinct value."""
    return np.asarray(np.array([bool(pattern.search(str(u))) for u in uniques],
                               dtype=bool)[codes])


def _texts(uniques: np.ndarray) -> np.ndarray:
    """A column's distinct values as text ("" for NA), an object array."""
    return np.array(["" if pd.isna(u) else str(u) for u in uniques], dtype=object)


def _text_at(column: pd.Series, rows: np.ndarray) -> np.ndarray:
    """The text of ``column`` at positions ``rows`` ("" for NA), from its codes."""
    codes, uniques = factorized(column)
    return np.asarray(_texts(uniques)[codes[rows]])


def _objects(values: np.ndarray) -> pd.Series:
    """An object column (not pandas' Arrow-backed ``str``, which copies every value)."""
    return pd.Series(values, dtype=object)


def _op_costs_at(events: pd.DataFrame, cost_row: np.ndarray, name_codes: np.ndarray,
                 name_uniques: np.ndarray
                 ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Per work item (``cost_row``: the row whose cost counts, -1 for none): its op's text
    columns (op, dtype, flops_source, input_dims), FLOPs, bytes and name code, each op's cost
    computed once per distinct cost row (what it needs freed on return)."""
    has_op = cost_row >= 0
    marked = np.zeros(int(cost_row.max()) + 1 if has_op.any() else 0, dtype=bool)
    marked[cost_row[has_op]] = True
    op_rows = np.flatnonzero(marked)  # the distinct cost rows, ascending (no sort)
    ops = events.iloc[op_rows, [events.columns.get_loc(c) for c in _COST_COLUMNS if c in events]]
    costs, which = _distinct_costs(ops) if len(ops) else (op_costs(events.iloc[:0]), None)
    n = len(cost_row)
    # text as object columns: pandas would otherwise copy every value into Arrow strings
    text = {c: np.full(n, "", dtype=object) for c in ("op", "dtype", "flops_source",
                                                       "input_dims")}
    op_flops, op_bytes = np.full(n, np.nan), np.full(n, np.nan)
    op_code = np.full(n, -1, dtype=np.intp)  # -1: no op
    if has_op.any() and which is not None:
        rows = cost_row[has_op]
        op_code[has_op] = name_codes[rows]
        picked = which[np.searchsorted(op_rows, rows)]  # each item's op's distinct cost
        text["op"][has_op] = _texts(name_uniques)[name_codes[rows]]
        op_flops[has_op] = costs["flops"].to_numpy(dtype=float)[picked]
        op_bytes[has_op] = costs["bytes"].to_numpy(dtype=float)[picked]
        text["dtype"][has_op] = costs["dtype"].to_numpy(dtype=object)[picked]
        text["flops_source"][has_op] = costs["flops_source"].to_numpy(dtype=object)[picked]
        text["input_dims"][has_op] = _text_at(events["input_dims"], rows)
    return text, op_flops, op_bytes, op_code


def _shares(takes: np.ndarray, cost_row: np.ndarray, dur_us: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Per work item, its share of its op's cost (by duration, among the op's items that
    take one) and how many items its op has."""
    sharing = np.where(takes, cost_row, -1)
    dur = np.where(takes, dur_us, 0.0)
    op_dur = pd.Series(dur).groupby(sharing).transform("sum").to_numpy()
    op_kernels = np.bincount(sharing + 1)[sharing + 1]  # each row's op's work items
    share = np.where(op_dur > 0, dur / np.where(op_dur > 0, op_dur, 1), 0.0)
    return share, op_kernels


def work_table(events: pd.DataFrame) -> pd.DataFrame:
    """One row per GPU work item: its op, share of the op's FLOPs and bytes, dtype."""
    is_work = events["is_gpu_work"].to_numpy(dtype=bool)
    name_codes, name_uniques = factorized(events["name"])  # the kernel and op tables group these
    names = name_codes[is_work]  # each item's name by its code: no copy of the items' rows
    n = len(names)
    cost_row = cost_rows(events, events["op_row"].to_numpy()[is_work])
    text, op_flops, op_bytes, op_code = _op_costs_at(events, cost_row, name_codes, name_uniques)
    cat_codes, cat_uniques = factorized(events["cat"])
    is_kernel = _flags(cat_codes[is_work], cat_uniques, re.compile(r"^kernel$", re.IGNORECASE))
    dur_us = events["dur_us"].to_numpy(dtype=float)[is_work]
    tf32 = (text["dtype"] == "fp32") & _flags(names, name_uniques, _TF32_KERNEL)
    text["dtype"][tf32] = "tf32"
    # an op's kernels share its cost by duration; its memsets / memcpys get a share only
    # when the op itself only moves memory (copy_, fill_: no FLOPs) and they do not carry
    # their own byte count
    own = (events["bytes"].to_numpy(dtype=float)[is_work] if "bytes" in events
           else np.full(n, np.nan))
    counted = ~is_kernel & np.isfinite(own) & (own >= 0)
    link = np.where(counted & _flags(names, name_uniques, _HOST_COPY), HOST_LINK,
                    np.where(counted & _flags(names, name_uniques, _PEER_COPY), PEER_LINK, "")
                    ).astype(object)
    memory_op = np.where(np.isnan(op_flops), -1.0, op_flops) == 0
    takes = (is_kernel | memory_op) & ~counted
    op_flops[~takes], op_bytes[~takes] = np.nan, np.nan
    text["flops_source"][~takes], text["dtype"][~takes] = "", ""
    share, op_kernels = _shares(takes, cost_row, dur_us)
    del takes, memory_op, tf32  # freed before the table is built
    flops = op_flops * share
    moved = own * np.where(_flags(names, name_uniques, _DEVICE_COPY), 2.0, 1.0)
    nbytes = np.where(counted, moved, op_bytes * share)
    del share, moved, own
    costed = ~np.isnan(op_flops) | ~np.isnan(op_bytes)
    layout = _flags(names, name_uniques, _LAYOUT_KERNEL)
    return pd.DataFrame({
        "name": _objects(_texts(name_uniques)[names]),
        "name_code": names,
        "is_kernel": is_kernel,
        "dur_us": dur_us,
        "ts_us": events["ts_us"].to_numpy(dtype=float)[is_work],
        "end_us": events["end_us"].to_numpy(dtype=float)[is_work],
        "step": events["step"].to_numpy()[is_work],
        "rank": events["rank"].to_numpy()[is_work],
        "cost_row": cost_row,
        "op": _objects(text["op"]),
        "op_code": op_code,
        "op_flops": op_flops,
        "op_bytes": op_bytes,
        "dtype": _objects(text["dtype"]),
        "flops_source": _objects(text["flops_source"]),
        "input_dims": _objects(text["input_dims"]),
        "link": _objects(link),
        "flops": flops,
        "bytes": nbytes,
        "counted": counted,
        "shared": costed & (op_kernels > 1),
        "layout_us": np.where(layout, dur_us, 0.0),
        "flops_us": np.where(np.isnan(flops), 0.0, dur_us),
        "bytes_us": np.where(np.isnan(nbytes), 0.0, dur_us),
    }, copy=False)  # the columns as built (one block each), not copied into 2-D blocks


def op_work(work: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The work table as the op table counts it: a memcpy / memset's own bytes count for its
    op only when the op launched no kernel (a copy), not beside a matmul's whose bytes are
    the shapes' (or unknown)."""
    op_row = events["op_row"].to_numpy()[events["is_gpu_work"].to_numpy(dtype=bool)]
    # by row reference (np.isin against the unique ones, without their sort)
    with_kernel = np.zeros(int(op_row.max(initial=0)) + 1, dtype=bool)
    with_kernel[op_row[work["is_kernel"].to_numpy() & (op_row >= 0)]] = True
    beside = work["counted"].to_numpy() & (op_row >= 0) & with_kernel[np.maximum(op_row, 0)]
    op = work["op"].to_numpy(dtype=object)
    return work.assign(
        op=_objects(np.where(op == "", "(no op)", op).astype(object)),
        bytes=np.where(beside, np.nan, work["bytes"].to_numpy(dtype=float)),
        bytes_us=np.where(beside, 0.0, work["bytes_us"].to_numpy(dtype=float)),
        counted=work["counted"].to_numpy(dtype=bool) & ~beside,
        link=_objects(np.where(beside, "", work["link"].to_numpy(dtype=object)).astype(object)))
