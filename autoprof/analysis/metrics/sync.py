"""Host-synchronising calls: the CPU waits for the GPU.

A row is a sync when its name is one of `SYNC_NAMES`, or when it is the op that launched a
blocking device-to-host copy (`Memcpy DtoH` into pageable memory: `aten::to`, `.cpu()`,
`copy_`). Nested syncs count once: `aten::item` -> `aten::_local_scalar_dense` ->
`cudaStreamSynchronize` is one sync, timed by its outermost row.

Only waits for a device count: `aten::item` / `aten::_local_scalar_dense` count when a CUDA
runtime or driver call runs inside them (a CPU tensor's `.item()` reads memory and never
waits), and nothing under an `autoprof::` label counts (autoprof's own syncs are not the
program's).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import (
    AUTOPROF_LABEL,
    DEVICE_TO_HOST,
    HOST_TO_DEVICE,
    RUNTIME_CATS,
    SCALAR_READS,
    SYNC_NAMES,
)
from autoprof.analysis.metrics._tree import (
    ancestors,
    has_ancestor_in,
    parent_positions,
    subtree,
)
from autoprof.analysis.metrics.stats import isin_mask, name_matches


def autoprof_mask(events: pd.DataFrame) -> np.ndarray:
    """Mask of the rows that are autoprof's own work: an `autoprof::` label and all below it."""
    if events.empty:
        return np.zeros(0, dtype=bool)
    labelled = name_matches(events["name"], AUTOPROF_LABEL)
    if not labelled.any():
        return labelled
    return subtree(parent_positions(events), labelled)


def blocking_copy_ops(events: pd.DataFrame) -> set[int]:
    """Row labels of the outermost ops (`aten::to` over `aten::_to_copy` over `aten::copy_`)
    that launched a device-to-host copy into pageable memory."""
    copies = events[isin_mask(events["cat"], ("gpu_memcpy",))]
    names = copies["name"]
    dtoh = names.str.contains(DEVICE_TO_HOST) & ~names.str.contains("Pinned")
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


def batch_copy_ops(events: pd.DataFrame) -> set[int]:
    """Row labels of the ops that launched a host-to-device copy (`x.to(device)`): from
    pageable memory such an op also syncs, on its own stream, beside its memcpy."""
    copies = events[isin_mask(events["cat"], ("gpu_memcpy",))]
    htod = copies["name"].str.contains(HOST_TO_DEVICE).to_numpy(bool)
    return {int(r) for r in copies["op_row"].to_numpy()[htod].tolist() if int(r) >= 0}


def of_batch_copy(events: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """For each of `rows` (rows of `events`, by label): whether it is, or sits directly
    under, an op that launched a host-to-device copy (`batch_copy_ops`): such a copy's own
    sync is one a CUDA graph's static inputs replace."""
    copies = np.fromiter(batch_copy_ops(events), np.int64)
    return np.isin(rows.index.to_numpy(), copies) | np.isin(rows["parent"].to_numpy(), copies)


def host_syncs(events: pd.DataFrame) -> pd.DataFrame:
    """The outermost synchronising rows of `events` (CPU lane), in time order."""
    cpu = isin_mask(events["lane"], ("cpu",))  # a mask: most rows are CPU rows
    named = cpu & isin_mask(events["name"], SYNC_NAMES)
    copies = sorted(blocking_copy_ops(events))
    if copies:  # only those that are CPU rows of `events`
        at = events.index.get_indexer(copies)
        named[at[at >= 0]] |= cpu[at[at >= 0]]
    if not named.any():
        return events[named]
    parent = parent_positions(events)
    reads = named & isin_mask(events["name"], SCALAR_READS)
    if reads.any():  # keep the scalar reads that wait on a device
        named &= ~reads | ancestors(parent, cpu & isin_mask(events["cat"], RUNTIME_CATS))
    named &= ~autoprof_mask(events)
    outermost = named & ~has_ancestor_in(parent, named)
    return events[outermost].sort_values("ts_us", kind="stable")
