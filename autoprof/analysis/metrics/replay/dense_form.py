"""A data-dependent selection's sync-free form computes on the whole tensor: the ops that
computed on the selected elements compute on every element the mask covers.

A boolean-mask index (`x[mask]`) or `.nonzero()` syncs because the size of its result is
known only on the GPU; a CUDA graph refuses it, so the captured form keeps every element and
weighs it (`torch.where(mask, x, 0)`, `x * w` with 0/1 weights). The trace shows how much
more that computes: `total`, the element count of the mask the data-dependent op
(`aten::nonzero`) reads, and `count`, the selection's size: the largest size at most `total`
that the first op after the selection carries and no op before it in the step does (sizes
made inside a selection's own op excepted: a second mask index of the same mask makes the
size the first one made). Each op after the selection in the step whose input shapes carry
`count` has its kernels grow by `total / count`: a kernel's duration is the device's
shortest kernels' (`capturable.tiny_kernel_us`, a fixed cost) plus a part that grows with
its elements, and only that part is scaled (a kernel over a few rows stays near the fixed
cost). What the sync-free form adds beside that (the product by the weights, forward and
backward) is not in the trace and is not replayed.
"""

from __future__ import annotations

import numpy as np

from autoprof.analysis.metrics._tree import has_ancestor_in
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.selection import DATA_DEPENDENT, _Rows, _sizes
from autoprof.analysis.metrics.replay.waits import END, START
from autoprof.analysis.metrics.stats import Coverage, isin_mask


def dense_durations(g: Graph, dur_us: np.ndarray, spans: Coverage,
                    fixed_us: float) -> np.ndarray:
    """`dur_us` (per GPU item of `g`) with the sync-free form of the data-dependent
    selections inside `spans` (the module doc): each item the selections feed keeps
    `fixed_us` (or its own duration, if shorter) and its remainder grows by the factor."""
    factor = dense_factors(g, spans)
    fixed = np.minimum(dur_us, fixed_us)
    out: np.ndarray = fixed + (dur_us - fixed) * factor
    return out


def dense_factors(g: Graph, spans: Coverage) -> np.ndarray:
    """Per GPU item of `g`, `total / count` of the largest selection inside `spans` that
    feeds it (1: none)."""
    factor = np.ones(len(g.item_row))
    syncs = np.flatnonzero(g.call_is_sync & (g.call_row >= 0))
    if not len(syncs) or not len(spans.s):
        return factor
    rows = _Rows(g)
    selections = _selection_subtrees(g, rows)
    lo = np.full(len(g.steps), np.nan)
    hi = np.full(len(g.steps), np.nan)
    lo[g.call_step[g.call_kind == START]] = g.call_ts_us[g.call_kind == START]
    hi[g.call_step[g.call_kind == END]] = g.call_ts_us[g.call_kind == END]
    launch_row = np.where(g.item_call >= 0, g.call_row[np.clip(g.item_call, 0, None)], -1)
    in_spans = spans.spans_at(rows.ts) >= 0
    for c in syncs.tolist():
        if spans.span_at(float(g.call_ts_us[c])) < 0:
            continue
        chain = rows.chain(int(g.call_row[c]))
        dependent = [r for r in chain if rows.names[r] in DATA_DEPENDENT]
        top = rows.outermost_op(chain[0])
        if not dependent or top < 0:
            continue
        total = _elements(str(rows.dims[dependent[-1]]))
        k = int(g.call_step[c])
        count = _selected(rows, top, (float(lo[k]), float(hi[k])), g.main_thread, total,
                          selections)
        if count <= 0 or count >= total:
            continue
        later = rows.op & in_spans & (rows.ts >= rows.end[top]) & (rows.ts < float(hi[k]))
        carrying = np.zeros(len(rows.ts), dtype=bool)
        carrying[[r for r in np.flatnonzero(later).tolist()
                  if count in _sizes(str(rows.dims[r]))]] = True
        fed = carrying | has_ancestor_in(rows.parent, carrying)
        hit = (launch_row >= 0) & fed[np.clip(launch_row, 0, None)]
        factor[hit] = np.maximum(factor[hit], total / count)
    return factor


def _elements(dims: str) -> int:
    """The element count of an op's first input, from its input shapes (`[[8192, 1024],
    []]`: 8388608); 0 when it has none."""
    first = dims.lstrip("[ ").split("]", 1)[0]
    sizes = [int(v) for v in first.replace(",", " ").split() if v.isdigit()]
    return int(np.prod(sizes)) if sizes else 0


def _selection_subtrees(g: Graph, rows: _Rows) -> np.ndarray:
    """Mask of the rows inside an outermost op that holds a data-dependent op (the sizes made
    there are a selection's, not sizes the step had before it)."""
    holding = np.zeros(len(rows.ts), dtype=bool)
    tops = [rows.outermost_op(r) for r in
            np.flatnonzero(isin_mask(g.events["name"], DATA_DEPENDENT)).tolist()]
    holding[[t for t in tops if t >= 0]] = True
    out: np.ndarray = holding | has_ancestor_in(rows.parent, holding)
    return out


def _selected(rows: _Rows, top: int, step: tuple[float, float], main: int, total: int,
              selections: np.ndarray) -> int:
    """The selection's size (the module doc's `count`): the largest size in (1, `total`]
    that the first op after `top` (on the main thread, under the same parent) carries and no
    op of the `step` window before `top` does outside a selection; 0 when none."""
    in_step = rows.op & (rows.ts >= step[0]) & (rows.ts < step[1])
    before = in_step & (rows.ts < rows.ts[top]) & ~selections
    seen = set().union(*(_sizes(str(d)) for d in rows.dims[before])) if before.any() else set()
    after = np.flatnonzero(in_step & (rows.ts >= rows.end[top]) & (rows.thread == main)
                           & (rows.parent == rows.parent[top]))
    if not len(after):
        return 0
    first = int(after[np.argmin(rows.ts[after])])
    fresh = [s for s in _sizes(str(rows.dims[first])) - seen if 1 < s <= total]
    return max(fresh) if fresh else 0
