"""Ops a fix removes, found from the trace's shapes: a selection's line, a bias add.

The ops a data-dependent selection feeds: what removing its line removes beside the sync.

A boolean-mask index (`h[h > 0]`) or `.nonzero()` syncs because the size of its result is
known only on the GPU. Removing the line removes more than the wait: the selection's own
kernels (`nonzero`, the index), every op computing on the selection, and their backward
(`IndexBackward0`'s `index_put_`, which calls `nonzero` again). The trace shows which ops
these are by the selection's size: it appears in the input shapes of the first op after the
sync's op and in no shape before it in the step, and every op whose inputs (or whose
children's inputs) carry it computes on the selection.

`selection_rows` gives, per sync under a data-dependent op (`DATA_DEPENDENT`), the outermost
op holding the sync and the outermost ops of the same step (any thread) that carry the
selection's size. Scalar results of the selection (a `.mean()` added to the loss) carry no
size and stay, with their backward.
"""

from __future__ import annotations

import re

import numpy as np

from autoprof.analysis.metrics.replay.bias import MATMUL, bias_add_pairs, op_positions
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.waits import END, START
from autoprof.analysis.metrics.stats import isin_mask, text_of

DATA_DEPENDENT = frozenset({"aten::nonzero", "aten::masked_select", "aten::unique",
                            "aten::_unique2", "aten::unique_consecutive", "aten::unique_dim"})
_INT = re.compile(r"\d+")


def _sizes(dims: str) -> set[int]:
    return {int(v) for v in _INT.findall(dims)}


class _Rows:
    """The rank's op rows: names, shapes, times, threads, and each op's outermost op."""

    def __init__(self, g: Graph) -> None:
        ev = g.events
        self.names = text_of(ev["name"])  # each distinct text once, not a column of them
        self.dims = text_of(ev["input_dims"]) if "input_dims" in ev else \
            np.full(len(ev), "", dtype=object)
        self.ts = ev["ts_us"].to_numpy(float)
        self.end = ev["end_us"].to_numpy(float)
        self.op = isin_mask(ev["cat"], ("cpu_op",))
        self.parent = g.row_parent
        self.thread = g.row_thread

    def chain(self, row: int) -> list[int]:
        """The row and its ancestors, innermost first."""
        out = []
        while row >= 0:
            out.append(row)
            row = int(self.parent[row])
        return out

    def outermost_op(self, row: int) -> int:
        """The outermost op of the unbroken chain of ops at or above the first op at or
        above `row` (a runtime call's op; -1: none)."""
        top = -1
        for r in self.chain(row):
            if self.op[r]:
                top = r
            elif top >= 0:
                break
        return top


def selection_rows(g: Graph) -> np.ndarray:
    """Positions (in the graph's events) of the outermost ops the module doc names."""
    rows = _Rows(g)
    lo = np.full(len(g.steps), np.nan)
    hi = np.full(len(g.steps), np.nan)
    lo[g.call_step[g.call_kind == START]] = g.call_ts_us[g.call_kind == START]
    hi[g.call_step[g.call_kind == END]] = g.call_ts_us[g.call_kind == END]
    out: set[int] = set()
    for c in np.flatnonzero(g.call_is_sync & (g.call_row >= 0)).tolist():
        chain = rows.chain(int(g.call_row[c]))
        if not any(rows.names[r] in DATA_DEPENDENT for r in chain):
            continue
        top = rows.outermost_op(chain[0])
        if top < 0:
            continue
        k = int(g.call_step[c])
        out.add(top)
        out |= _fed(rows, top, float(lo[k]), float(hi[k]), g.main_thread)
    return np.array(sorted(out), dtype=np.int64)


def _fed(rows: _Rows, top: int, lo: float, hi: float, main: int) -> set[int]:
    """The outermost ops of [lo, hi) that carry the size of `top`'s result."""
    in_step = rows.op & (rows.ts >= lo) & (rows.ts < hi)
    before = in_step & (rows.ts < rows.ts[top])
    seen = set().union(*(_sizes(d) for d in rows.dims[before])) if before.any() else set()
    after = np.flatnonzero(in_step & (rows.ts >= rows.end[top]) & (rows.thread == main)
                           & (rows.parent == rows.parent[top]))
    if not len(after):
        return set()
    size = _sizes(rows.dims[int(after[np.argmin(rows.ts[after])])]) - seen
    if not size:
        return set()
    later = np.flatnonzero(in_step & (rows.ts >= rows.end[top]))
    hits = [int(r) for r in later.tolist() if _sizes(rows.dims[r]) & size]
    return {rows.outermost_op(r) for r in hits} - {-1}


def bias_fold_spans(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The host spans (starts, ends) `torch.addmm(b, x, w)` takes out of `x @ w + b`, one
    bias add of `bias.py` at a time (the rule on the graph's thread and parent codes): the
    add, with the interpreter's dispatch of `+` between the product's end and the add's start;
    and where the product is `aten::matmul`, its own time around its children (`addmm` is
    dispatched directly, without `matmul`'s composite layer above the GEMM)."""
    ev = g.events
    ops = op_positions(ev)
    adds, products = bias_add_pairs(ev, ops, g.row_thread[ops], g.row_parent[ops])
    ts, end = ev["ts_us"].to_numpy(float), ev["end_us"].to_numpy(float)
    matmuls = products[isin_mask(ev["name"], (MATMUL,))[products]]
    kids = ops[np.isin(g.row_parent[ops], matmuls)]  # the GEMM ops below the composites
    parent = g.row_parent[kids]
    composites = np.unique(parent)  # each matmul with an op below it
    first_kid_ts = np.full(len(composites), np.inf)
    last_kid_end = np.full(len(composites), -np.inf)
    at = np.searchsorted(composites, parent)
    np.minimum.at(first_kid_ts, at, ts[kids])
    np.maximum.at(last_kid_end, at, end[kids])
    starts = np.concatenate([end[products], ts[composites], last_kid_end])
    ends = np.concatenate([end[adds], first_kid_ts, end[composites]])
    order = np.argsort(starts, kind="stable")
    return starts[order], ends[order]
