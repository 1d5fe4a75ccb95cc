"""Host-synchronising calls: the CPU waits for the GPU.

A row is a sync when its name is one of `SYNC_NAMES`, or when it is the op that launched a
blocking device-to-host copy (`Memcpy DtoH` into pageable memory: `aten::to`, `.cpu()`,
`copy_`). Nested syncs count once: `aten::item` -> `aten::_local_scalar_dense` ->
`cudaStreamSynchronize` is one sync, timed by its outermost row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import isin_mask

SYNC_NAMES = frozenset({
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "aten::item",
    "aten::_local_scalar_dense",
})


def blocking_copy_ops(events: pd.DataFrame) -> set[int]:
    """Row labels of the outermost ops (`aten::to` over `aten::_to_copy` over `aten::copy_`)
    that launched a device-to-host copy into pageable memory."""
    copies = events[isin_mask(events["cat"], ("gpu_memcpy",))]
    names = copies["name"]
    dtoh = names.str.contains("DtoH|Device -> Host", regex=True) & ~names.str.contains("Pinned")
    parent_of, cat_of = events["parent"], events["cat"]
    out = set()
    for row in copies.loc[dtoh.to_numpy(dtype=bool), "op_row"]:
        row = int(row)
        if row < 0:
            continue
        up = int(parent_of.get(row, -1))
        while up >= 0 and cat_of.get(up) == "cpu_op":
            row, up = up, int(parent_of.get(up, -1))
        out.add(row)
    return out


def host_syncs(events: pd.DataFrame) -> pd.DataFrame:
    """The outermost synchronising rows of `events` (CPU lane), in time order."""
    cpu = isin_mask(events["lane"], ("cpu",))  # a mask: most rows are CPU rows
    marked = set(events.index[cpu & isin_mask(events["name"], SYNC_NAMES)])
    copies = sorted(blocking_copy_ops(events))
    if copies:  # only those that are CPU rows of `events`
        at = events.index.get_indexer(copies)
        marked |= {c for c, i in zip(copies, at, strict=True) if i >= 0 and cpu[i]}
    if not marked:
        return events[np.zeros(len(events), dtype=bool)]
    parent_of = events["parent"]
    outermost = []
    for label in sorted(marked):
        p = int(parent_of.get(label, -1))
        nested = False
        while p >= 0:
            if p in marked:
                nested = True
                break
            p = int(parent_of.get(p, -1))
        if not nested:
            outermost.append(label)
    return events.loc[outermost].sort_values("ts_us", kind="stable")
