"""`NonBlockingCopies` applied to a replay plan: host-device copies from pinned memory,
`non_blocking=True`.

A copy from pageable memory made without `non_blocking` (`x.to(device)`) holds the host
twice: in its copy call (`cudaMemcpyAsync`), which stages the data through the driver's own
pinned buffer, and in the `cudaStreamSynchronize` that PyTorch's copy op makes right after
it, under the same `aten::copy_` (`memcpy_and_sync`): the host waits there for everything
queued on the stream before the copy, then the copy. Pinned and `non_blocking`, neither
waits: the copy call costs a launch, the op's sync is not made (`op_syncs`; the stream
orders the copy before the kernels that read it), and the copy runs `speedup` times faster
on the GPU.
"""

from __future__ import annotations

import numpy as np

from autoprof.analysis.loader.vocabulary import DEVICE_TO_HOST, HOST_TO_DEVICE
from autoprof.analysis.metrics.replay.changes import NonBlockingCopies
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.simulate import Plan
from autoprof.analysis.metrics.replay.waits import LAUNCH

_DIRECTION = {"HtoD": HOST_TO_DEVICE, "DtoH": DEVICE_TO_HOST}


def non_blocking(g: Graph, plan: Plan, change: NonBlockingCopies) -> None:
    """The copies in `change.directions` made from pinned memory, `non_blocking` (module
    doc)."""
    names = g.names()
    wanted = [_DIRECTION[d] for d in change.directions]
    call_us = plan.launch_us if change.call_us is None else change.call_us
    op_row = g.events["op_row"].to_numpy()
    ops: set[int] = set()  # the ops (by row label) that made the copies
    for c in np.flatnonzero(g.call_kind == LAUNCH).tolist():
        items = g.call_items[c]
        copies = [i for i in items if any(p.search(names[g.item_row[i]]) for p in wanted)]
        if not copies:
            continue
        if g.call_is_sync[c]:
            plan.call_waits[c] = ()
        plan.call_cost_us[c] = min(plan.call_cost_us[c], call_us)
        plan.item_dur_us[copies] /= change.speedup
        ops.update(int(r) for r in op_row[g.item_row[copies]].tolist() if int(r) >= 0)
    if change.op_syncs:
        for c in copy_syncs(g, ops).tolist():
            plan.call_waits[c] = ()


def copy_syncs(g: Graph, ops: set[int]) -> np.ndarray:
    """The sync calls (not copies) that one of `ops` (row labels) makes: the call is the op's
    own row or sits directly under it (a blocking copy's `cudaStreamSynchronize` under its
    `aten::copy_`)."""
    if not ops:
        return np.zeros(0, dtype=np.int64)
    labels = g.events["label"].to_numpy()
    wanted = np.fromiter(ops, np.int64, len(ops))
    syncs = np.flatnonzero(g.call_is_sync & (g.call_row >= 0) & (g.call_kind != LAUNCH))
    rows = g.call_row[syncs]
    parent = g.row_parent[rows]
    mine = np.isin(labels[rows], wanted) | \
        ((parent >= 0) & np.isin(labels[np.clip(parent, 0, None)], wanted))
    return np.asarray(syncs[mine], dtype=np.int64)
