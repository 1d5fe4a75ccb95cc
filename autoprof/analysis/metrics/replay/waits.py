"""What each host call waits for, and which GPU work waits for another stream.

Kineto does not record which stream a sync or an event names, so the waits are inferred the
way the CUDA runtime orders them, from the calls in measured order:

| call | waits for |
| --- | --- |
| `cudaDeviceSynchronize` | the last GPU item launched so far on every stream |
| `cudaStreamSynchronize` | the last item on the stream the thread launched to last |
| `cudaEventSynchronize` | the item the latest `cudaEventRecord` recorded |
| a copy whose GPU copy ended before the call returned (`cudaMemcpy`, a pageable copy) | that copy |
| `cudaStreamWaitEvent` | (the thread's next launch: see below) |

After a `cudaStreamWaitEvent`, the thread's next launch waits for one of the last items on
the other streams at the time of the wait: the latest-ending one that ended before the
launch's work started (the record that event names is not in the trace).

A wait that the measured times contradict (the awaited item ended after the call returned)
is dropped, so the replay never invents a wait the trace did not show.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import LAUNCH_NAME, SYNC_NAMES
from autoprof.analysis.metrics.stats import isin_mask, text_of

# The graph's call kinds (graph.py reads them from here).
START, LAUNCH, SYNC, RECORD, WAIT_EVENT, END = 0, 1, 2, 3, 4, 5
DEVICE_SYNCS = frozenset({"cudaDeviceSynchronize", "cuCtxSynchronize", "hipDeviceSynchronize"})
STREAM_SYNCS = frozenset({"cudaStreamSynchronize", "cuStreamSynchronize",
                          "hipStreamSynchronize"})
EVENT_SYNCS = frozenset({"cudaEventSynchronize", "cuEventSynchronize", "hipEventSynchronize"})
RECORDS = frozenset({"cudaEventRecord", "cuEventRecord", "hipEventRecord",
                     "cudaEventRecordWithFlags"})
STREAM_WAITS = frozenset({"cudaStreamWaitEvent", "cuStreamWaitEvent", "hipStreamWaitEvent"})
COPY_NAME = re.compile(r"memcpy", re.IGNORECASE)
# How far a measured GPU end may pass the end of the host call that waited for it (Kineto
# aligns the GPU clock to the host's to within a microsecond or so).
CLOCK_TOLERANCE_US = 1.0


class _State:
    """The runtime's view while the calls are walked in order."""

    def __init__(self) -> None:
        self.last_on_stream: dict[int, int] = {}  # stream -> last item row launched there
        self.thread_stream: dict[int, int] = {}  # thread -> stream it launched to last
        self.recorded = -1  # item row the latest event record captured
        # thread -> the last item per stream when it called cudaStreamWaitEvent
        self.pending: dict[int, dict[int, int]] = {}

    def current(self, thread: int) -> int:
        s = self.thread_stream.get(thread)
        return self.last_on_stream.get(s, -1) if s is not None else -1


# A call's row of `link_waits`: row, kind, ts, end, is_sync, waits, deps, items. Its
# sequences are tuples: a tuple of numbers is left out of the garbage collector's scans.
Call = tuple[int, int, float, float, bool, tuple[int, ...], tuple[tuple[int, int], ...],
             tuple[int, ...]]
COLUMNS = ["row", "kind", "ts", "end", "is_sync", "waits", "deps", "items"]
NONE: tuple[int, ...] = ()
NO_DEPS: tuple[tuple[int, int], ...] = ()


def _binding(snapshot: dict[int, int], item: int, ts: list[float], end: list[float],
             stream_of: dict[int, int]) -> int:
    """Of the last items on other streams at a stream wait, the latest-ending one that ended
    before `item` started (-1: none)."""
    best, best_end = -1, -np.inf
    for s, dep in snapshot.items():
        if s != stream_of[item] and best_end < end[dep] <= ts[item] + CLOCK_TOLERANCE_US:
            best, best_end = dep, end[dep]
    return best


def _named_waits(name: str, thread: int, state: _State) -> list[int]:
    if name in STREAM_SYNCS and state.current(thread) >= 0:
        return [state.current(thread)]
    if name in EVENT_SYNCS and state.recorded >= 0:
        return [state.recorded]
    return list(state.last_on_stream.values())


def _launched(callers: np.ndarray, items: np.ndarray, ts: list[float]
              ) -> dict[int, tuple[int, ...]]:
    """Each calling row's items, in the order they started (the order given among equals)."""
    order = np.argsort(callers, kind="stable")
    keys, first = np.unique(callers[order], return_index=True)
    bounds = np.r_[first, len(order)].tolist()
    grouped: list[int] = items[order].tolist()
    out: dict[int, tuple[int, ...]] = {}
    for k, c in enumerate(keys.tolist()):
        lo, hi = bounds[k], bounds[k + 1]
        out[c] = (grouped[lo],) if hi - lo == 1 else \
            tuple(sorted(grouped[lo:hi], key=ts.__getitem__))
    return out


def link_waits(ev: pd.DataFrame, thread: np.ndarray, outer_runtime: np.ndarray,
               callers: np.ndarray, items: np.ndarray, stream_of: dict[int, int],
               lo: float, hi: float) -> pd.DataFrame:
    """The calls of the window [lo, hi): `row`, `kind`, `ts`, `end`, `is_sync`, `waits`
    (item rows), `deps` ((item row, item row it waits for) pairs) and `items` (the rows of
    the GPU work it launched, in the order they started), one row per call."""
    names = text_of(ev["name"])
    ts, end = ev["ts_us"].to_numpy(float), ev["end_us"].to_numpy(float)
    # read one element at a time: as Python floats (the same values), not numpy scalars
    ts_us, end_us, threads = ts.tolist(), end.tolist(), thread.tolist()
    launched = _launched(np.asarray(callers, np.int64), np.asarray(items, np.int64), ts_us)
    named = isin_mask(ev["name"], SYNC_NAMES | RECORDS | STREAM_WAITS)
    pos = np.flatnonzero(outer_runtime & (ts >= lo) & (ts < hi) & named)
    cand = np.unique(np.r_[pos, np.fromiter(launched, np.int64, len(launched))])
    cand = cand[np.argsort(ts[cand], kind="stable")]
    return pd.DataFrame(_walk(cand.tolist(), names, launched, threads, ts_us, end_us,
                              stream_of), columns=COLUMNS)


def _walk(cand: list[int], names: np.ndarray, launched: dict[int, tuple[int, ...]],
          threads: list[int], ts: list[float], end: list[float], stream_of: dict[int, int]
          ) -> list[Call]:
    """The rows of `link_waits` for the calls `cand`, in measured order. A launch that
    copies nothing, syncs nothing and follows no stream wait (most calls) is linked inline."""
    state = _State()
    last_on_stream, thread_stream, pending = (state.last_on_stream, state.thread_stream,
                                              state.pending)
    copies: dict[str, bool] = {}  # a launch's name: it copies (its regex tests, once)
    out: list[Call] = []
    for r in cand:
        name = names[r]
        own = launched.get(r)
        if own is None:
            out.append(_one_call(r, name, False, threads[r], NONE, ts, end, stream_of, state))
            continue
        if name not in copies:
            copies[name] = bool(COPY_NAME.search(name) and LAUNCH_NAME.search(name))
        th = threads[r]
        if copies[name] or name in SYNC_NAMES or th in pending:
            out.append(_one_call(r, name, copies[name], th, own, ts, end, stream_of, state))
            continue
        for i in own:
            last_on_stream[stream_of[i]] = i
        thread_stream[th] = stream_of[own[-1]]
        out.append((r, LAUNCH, ts[r], end[r], False, NONE, NO_DEPS, own))
    return out


def _one_call(r: int, name: str, copy: bool, thread: int, own: tuple[int, ...],
              ts: list[float], end: list[float], stream_of: dict[int, int], state: _State
              ) -> Call:
    """Call `r`'s row of `link_waits`; `copy`: its name is a copy's launch."""
    deps: tuple[tuple[int, int], ...] = NO_DEPS
    if own:  # a stream wait's snapshot binds the thread's next launch only (its first item)
        snapshot = state.pending.pop(thread, None)
        dep = _binding(snapshot, own[0], ts, end, stream_of) if snapshot else -1
        if dep >= 0:
            deps = ((own[0], dep),)
        last_on_stream = state.last_on_stream
        for i in own:
            last_on_stream[stream_of[i]] = i
        state.thread_stream[thread] = stream_of[own[-1]]
    waits: list[int] = []
    if copy and \
            max(end[i] for i in own) <= end[r] + CLOCK_TOLERANCE_US:
        waits = [own[-1]]  # a synchronous copy: the call returned after its copy ended
    elif name in SYNC_NAMES:
        waits = _named_waits(name, thread, state)
    if waits:  # most calls wait for nothing: no list to filter
        waits = [i for i in waits if end[i] <= end[r] + CLOCK_TOLERANCE_US]
    kind = LAUNCH if own else SYNC if name in SYNC_NAMES else \
        RECORD if name in RECORDS else WAIT_EVENT
    if kind == RECORD:
        state.recorded = state.current(thread)
    elif kind == WAIT_EVENT:
        state.pending[thread] = dict(state.last_on_stream)
    return (r, kind, float(ts[r]), float(end[r]), bool(waits), tuple(waits), deps, own)
