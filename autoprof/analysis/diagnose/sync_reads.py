"""`remove-sync` on a scalar read: the read goes from the step, with the check on its line.

`.item()` (`aten::item` > `aten::_local_scalar_dense`, with `if tensor:` above it as
`aten::is_nonzero`) copies one value to the host and waits for the device. The fix the
`host_sync` opportunity names, reading it once every N steps (or accumulating on the device
and reading once), takes the read out of the step: its op goes whole (its dispatch, its
copy's launch and the copy, its wait). `RemoveSync` alone keeps the op's own cost, the
model of a sync written in a sync-free form that stays (a mask index as `torch.where`), and
stays the model of every other sync. Where the run has source lines (metrics/lines), the
ops just before the read on its thread from the same line go with it, as long as each takes
small inputs (at most SMALL_ELEMENTS elements: the value being checked, `(tok == EOS).all()`
before `.item()`; a large op on the line is the work the value comes from, which the check
needs): a check read every N steps is that line run once in N. Accumulating on the device
keeps those ops (and adds one), so there the gain is the read's alone; the hint says so.

Measured on the H100 (development programs: their predictions were read): greedy decoding
reading `(tok == EOS).all().item()` after every token, checked every 32nd token instead:
1.03x predicted from the wait alone, 1.10x with the read gone, 1.26x with its line's `eq`
and `all`, against 1.39x measured; a training step reading `loss.item()` every step,
accumulated on the device instead: 1.004x from the wait alone (under the 1% a fix must
gain to be offered), 1.020x with the read gone, 1.018x measured.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.op_loop import SMALL_ELEMENTS, small_inputs
from autoprof.analysis.loader.vocabulary import SCALAR_READS
from autoprof.analysis.metrics._tree import parent_positions
from autoprof.analysis.metrics.stats import cpu_mask, factorized, merge_intervals
from autoprof.analysis.metrics.sync import host_syncs

__all__ = ["SMALL_ELEMENTS", "ReadSpans", "Sources", "read_hint", "read_spans"]
_OP = "aten::"

ReadSpans = tuple[tuple[float, ...], tuple[float, ...], list[str]]
# each events-table row's source line (the lines attribution's `source`, by row label), or
# None where the run has none: called only where a step reads a scalar
Sources = Callable[[], "pd.Series | None"]


def _lifted(is_op: np.ndarray, parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each row (a position) lifted to its outermost `aten::` ancestor (itself when its
    parent is no op): `if t:`'s `aten::is_nonzero` above its `aten::item`."""
    out = rows.copy()
    while True:
        up = parent[out]
        ok = up >= 0
        ok[ok] = is_op[up[ok]]
        if not ok.any():
            return out
        out[ok] = up[ok]


class _Thread:
    """The outermost ops of the profiled steps as arrays, to walk back from a read."""

    def __init__(self, host: pd.DataFrame, outer: np.ndarray, sources: pd.Series) -> None:
        self.at = np.flatnonzero(outer)
        self.at = self.at[np.lexsort((host["ts_us"].to_numpy(float)[self.at],
                                      host["tid"].to_numpy()[self.at],
                                      host["step"].to_numpy()[self.at]))]
        self.key = list(zip(host["step"].to_numpy()[self.at].tolist(),
                            host["tid"].to_numpy()[self.at].tolist(), strict=True))
        self.source = sources.reindex(host.index[self.at]).tolist()
        self.dims = host["input_dims"].to_numpy()[self.at].tolist() \
            if "input_dims" in host.columns else None
        self.where = {int(p): k for k, p in enumerate(self.at.tolist())}

    def with_line(self, read: int) -> list[int]:
        """The read and the outermost ops just before it in its step and thread from its
        line, each with small inputs (positions in `host`)."""
        k = self.where.get(read)
        if k is None or not isinstance(self.source[k], str) or not self.source[k]:
            return [read]
        out = [read]
        j = k - 1
        while j >= 0 and self.key[j] == self.key[k] and self.source[j] == self.source[k] \
                and self.dims is not None and small_inputs(self.dims[j]):
            out.append(int(self.at[j]))
            j -= 1
        return out


def read_spans(events: pd.DataFrame, sources: Sources | None = None) -> ReadSpans | None:
    """The host spans `remove-sync` deletes (the module doc): each scalar read in the
    profiled steps, with the small ops of its line just before it where `sources` gives the
    source line of each events-table row; their merged starts and ends, and the lines whose
    ops went with a read. None where no step reads a scalar."""
    host = events[cpu_mask(events) & (events["step"] >= 0).to_numpy()]
    syncs = host_syncs(host)
    syncs = syncs[syncs["name"].isin(SCALAR_READS)]
    if not len(syncs):
        return None
    codes, uniques = factorized(host["name"])  # each distinct name tested once
    is_op = np.array([str(u).startswith(_OP) for u in uniques], dtype=bool)[codes]
    parent = parent_positions(host)
    reads = sorted(set(_lifted(is_op, parent, host.index.get_indexer(syncs.index)).tolist()))
    has_op_above = parent >= 0
    has_op_above[has_op_above] = is_op[parent[has_op_above]]
    lines = sources() if sources is not None else None
    thread = _Thread(host, is_op & ~has_op_above, lines) if lines is not None else None
    rows: list[int] = []
    named: set[str] = set()
    for read in reads:
        got = thread.with_line(read) if thread is not None else [read]
        rows += got
        if len(got) > 1 and thread is not None:
            named.add(str(thread.source[thread.where[read]]))
    starts, ends = merge_intervals(host["ts_us"].to_numpy(float)[rows],
                                   host["end_us"].to_numpy(float)[rows])
    return (tuple(float(v) for v in starts), tuple(float(v) for v in ends), sorted(named))


def read_hint(spans: ReadSpans | None) -> str:
    """What the prediction took out, for the hint."""
    if spans is None:
        return ""
    if not spans[2]:
        return " (predicted with each .item() read out of the step)"
    return (f" (predicted with each .item() read out of the step with the check before it on "
            f"{', '.join(spans[2])}, as when it is read every N steps; accumulating on the "
            "device keeps that check's ops and gains less)")
