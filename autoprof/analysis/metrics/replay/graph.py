"""One rank's profiled steps as a dependency graph: host calls in order, GPU work, waits.

The host side is a list of *calls* in measured order over every thread: the runtime and
driver calls that launch GPU work, wait for it (syncs, synchronous copies), record an event
or make a stream wait for one, plus a start and an end marker per profiler step on the
thread that runs the steps. Everything else the host does (ops, Python, the gaps between
them) is the measured time between two calls of a thread (`gap_us`).

| call | thread | ts_us | cost_us | kind | items | waits |
| --- | --- | --- | --- | --- | --- | --- |
| start of step 2 | main | 100.0 | 0.0 | START | | |
| cudaLaunchKernel | main | 104.0 | 5.0 | LAUNCH | kernel 0 | |
| cudaStreamSynchronize | main | 112.0 | 40.0 | SYNC | | kernel 0 |

GPU items are the kernels, memcpys and memsets those calls launched (by `launch_row`), each
on its (device, stream) queue in launch order; GPU work launched before the first step (or
before the trace) is a fixed *carry* item that keeps its measured times. GPU work belongs to
the step whose call launched it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import NOT_CPU_WORK_CATS, RUNTIME_CATS
from autoprof.analysis.metrics._tree import has_ancestor_in, parent_positions
from autoprof.analysis.metrics.replay.sample import sampled
from autoprof.analysis.metrics.replay.waits import END, NONE, START, link_waits
from autoprof.analysis.metrics.stats import (
    Coverage,
    cpu_mask,
    for_rank,
    isin_mask,
    ranks_of,
    require_columns,
    step_rows,
    text_of,
)

NEEDS = ["name", "cat", "lane", "is_gpu_work", "ts_us", "dur_us", "end_us", "parent",
         "launch_row", "op_row", "device", "stream", "pid", "tid", "rank"]
OPTIONAL = ["input_dims"]


@dataclass
class Graph:
    """The dependency graph of one rank (arrays indexed by call or by GPU item)."""

    steps: np.ndarray  # profiler step numbers, in order
    main_thread: int
    # calls, in measured order
    call_thread: np.ndarray
    call_kind: np.ndarray
    call_is_sync: np.ndarray  # waits for GPU work (a SYNC, or a LAUNCH that copies and waits)
    call_step: np.ndarray  # index into `steps`
    call_ts_us: np.ndarray
    call_dur_us: np.ndarray
    call_gap_lo_us: np.ndarray  # the measured host stretch before the call on its thread
    call_row: np.ndarray  # position in the rank's events (-1: a marker)
    call_items: list[range]  # each call's GPU items (consecutive): no list for the GC to scan
    call_waits: list[tuple[int, ...]]  # GPU items a sync waits for
    # GPU items, in launch order (carry items first)
    item_stream: np.ndarray
    item_call: np.ndarray  # -1: a carry item
    item_ts_us: np.ndarray
    item_dur_us: np.ndarray
    item_row: np.ndarray
    item_deps: list[tuple[int, ...]]  # cross-stream event waits
    events: pd.DataFrame  # the rank's events (positions index these)
    row_thread: np.ndarray  # each event's thread code
    row_parent: np.ndarray  # each event's parent position (-1: none)
    # arrays derived from the events once and read by every replay of this graph
    memo: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    # per step: whether a replay reports it (None: every step; a sample's lead-in steps are
    # replayed, not reported: sample.py)
    reported: np.ndarray | None = None
    # replays of this graph read again (the calibrated plan, a baseline's replayed steps:
    # replay.py's `_calibrated` and `_baseline`), by what they were made from
    kept: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def names(self) -> np.ndarray:
        """Each event's name as text (read once per graph)."""
        if "names" not in self.memo:
            self.memo["names"] = text_of(self.events["name"])
        return self.memo["names"]

    def item_cats(self) -> np.ndarray:
        """Each GPU item's category as text (read once per graph)."""
        if "item_cats" not in self.memo:
            self.memo["item_cats"] = text_of(self.events["cat"])[self.item_row]
        return self.memo["item_cats"]

    @property
    def n_calls(self) -> int:
        return len(self.call_kind)

    @property
    def n_items(self) -> int:
        return len(self.item_stream)

    def gap_us(self) -> np.ndarray:
        """Measured host time between each call and the previous one on its thread."""
        gap: np.ndarray = np.maximum(self.call_ts_us - self.call_gap_lo_us, 0.0)
        return gap

    def busy_gap_us(self) -> np.ndarray:
        """The part of `gap_us` that the thread spent inside its own traced rows: on a
        thread other than the main one the rest is idle (waiting for work), not host cost.
        Found once per graph; each call returns a copy."""
        if "busy_gap_us" not in self.memo:
            self.memo["busy_gap_us"] = self._busy_gap_us()
        return self.memo["busy_gap_us"].copy()

    def _busy_gap_us(self) -> np.ndarray:
        cpu = isin_mask(self.events["lane"], ("cpu",)) & \
            ~isin_mask(self.events["cat"], NOT_CPU_WORK_CATS)
        ts = self.events["ts_us"].to_numpy(float)
        end = self.events["end_us"].to_numpy(float)
        out = self.gap_us()
        for th in np.unique(self.call_thread).tolist():
            if th == self.main_thread:
                continue
            rows = cpu & (self.row_thread == th)
            cover = Coverage(ts[rows], end[rows])
            for c in np.flatnonzero(self.call_thread == th).tolist():
                out[c] = cover.covered(float(self.call_gap_lo_us[c]), float(self.call_ts_us[c]))
        return out


def pair_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One integer code per distinct (a, b) pair, numbered in order of first appearance.
    Each column is factorized on its own, then the combined codes once more: a pair of
    columns factorized as one (a MultiIndex) is ~20x slower at 1M rows."""
    ca, _ = pd.factorize(a, use_na_sentinel=False)
    cb, levels = pd.factorize(b, use_na_sentinel=False)
    combined = np.asarray(ca, np.int64) * max(len(levels), 1) + np.asarray(cb, np.int64)
    codes, _ = pd.factorize(combined)
    return np.asarray(codes, dtype=np.int64)


def _outermost_runtime(parent: np.ndarray, runtime: np.ndarray) -> np.ndarray:
    """Each row's outermost runtime ancestor-or-self (-1 for rows that are not runtime)."""
    out = np.where(runtime, np.arange(len(parent)), -1)
    cur = out.copy()
    while True:
        up = np.where(cur >= 0, parent[np.clip(cur, 0, None)], -1)
        move = (cur >= 0) & (up >= 0)
        if not move.any():
            return out
        cur = np.where(move, up, -1)
        hit = move & runtime[np.clip(cur, 0, None)]
        out[hit] = cur[hit]


def _step_spans(ev: pd.DataFrame, cpu: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray, int]:
    """(step numbers, starts, ends, position of the first step row); a trace without
    `ProfilerStep#N` spans is one step -1 over its CPU rows' longest thread."""
    steps = step_rows(ev)
    if len(steps):
        first = int(ev.index.get_indexer(steps.index[:1])[0])
        return (steps["step_no"].to_numpy(np.int64), steps["ts_us"].to_numpy(float),
                steps["end_us"].to_numpy(float), first)
    pos = np.flatnonzero(cpu)
    if not len(pos):
        raise ValueError("replay: the events table has no CPU rows to replay")
    first = int(pos[np.argmax(ev["dur_us"].to_numpy(float)[pos])])
    lo = float(ev["ts_us"].to_numpy(float)[pos].min())
    hi = float(ev["end_us"].to_numpy(float)[pos].max())
    return np.array([-1]), np.array([lo]), np.array([hi]), first


def rank_rows(events: pd.DataFrame, rank: int | None = None,
              columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of `rank` (None: the only or first) the replay reads, of `columns` (None:
    all); raises ValueError for a column it needs missing or an empty table."""
    require_columns(events, NEEDS, "replay")
    ranks = ranks_of(events)
    if not ranks:
        raise ValueError("replay: the events table is empty")
    wanted = ranks[0] if rank is None else rank
    table = events if columns is None else events[columns]
    return table if ranks == [wanted] else for_rank(table, wanted)


_Shared = tuple[dict[tuple[int, int | None], tuple[pd.DataFrame, Graph]], int | None]
_SHARED: ContextVar[_Shared | None] = ContextVar("autoprof_shared_graphs", default=None)


@contextmanager
def shared_graphs(max_steps: int | None = None) -> Iterator[None]:
    """Inside this block `graph_of` builds each (events table, rank) graph once: for a
    caller that replays one table many times and does not change it meanwhile; with
    `max_steps`, of at most that many of the rank's profiler steps (`sample.sampled`)."""
    token = _SHARED.set(({}, max_steps))
    try:
        yield
    finally:
        _SHARED.reset(token)


def graph_of(events: pd.DataFrame, rank: int | None = None) -> Graph:
    """`build_graph`, shared with the other replays of the same table inside
    `shared_graphs` (built anew outside one)."""
    shared = _SHARED.get()
    if shared is None:
        return build_graph(events, rank)
    graphs, max_steps = shared
    hit = graphs.get((id(events), rank))
    if hit is not None and hit[0] is events:
        return hit[1]
    table, leads = (events, frozenset()) if max_steps is None else \
        sampled(events, rank, max_steps)
    g = build_graph(table, rank)
    if leads:
        g.reported = ~np.isin(g.steps, list(leads))
    graphs[(id(events), rank)] = (events, g)
    return g


def build_graph(events: pd.DataFrame, rank: int | None = None) -> Graph:
    """The dependency graph of one rank's profiled steps (`rank` None: the only or first)."""
    shapes = [c for c in OPTIONAL if c in events.columns]  # for selection.py
    ev = rank_rows(events, rank, NEEDS + shapes).reset_index()
    ev = ev.rename(columns={"index": "label"})
    cpu = cpu_mask(ev)
    numbers, starts, ends, first_step = _step_spans(ev, cpu)
    thread = pair_codes(ev["pid"].to_numpy(), ev["tid"].to_numpy())
    parent = parent_positions(ev.set_index("label"))
    runtime = cpu & isin_mask(ev["cat"], RUNTIME_CATS)
    outer = _outermost_runtime(parent, runtime)
    ts = ev["ts_us"].to_numpy(float)
    work = np.flatnonzero(ev["is_gpu_work"].to_numpy(dtype=bool))
    launch = ev.set_index("label").index.get_indexer(ev["launch_row"].to_numpy()[work])
    caller = np.where(launch >= 0, outer[np.clip(launch, 0, None)], -1)
    lo, hi = float(starts[0]), float(ends[-1])
    in_window = (caller >= 0) & (ts[np.clip(caller, 0, None)] >= lo) & \
        (ts[np.clip(caller, 0, None)] < hi)
    stream = pair_codes(ev["device"].to_numpy()[work], ev["stream"].to_numpy()[work])
    stream_of = dict(zip(work.tolist(), stream.tolist(), strict=True))
    calls = link_waits(ev, thread, runtime & ~has_ancestor_in(parent, runtime),
                       caller[in_window], work[in_window], stream_of, lo, hi)
    markers = _markers(starts, ends, int(thread[first_step]))
    return _assemble(ev, thread, parent, calls, markers, numbers, starts, work, in_window, caller,
                     stream_of)


def _markers(starts: np.ndarray, ends: np.ndarray, main: int) -> pd.DataFrame:
    n = len(starts)
    return pd.DataFrame({
        "row": np.full(2 * n, -1), "kind": np.r_[np.full(n, START), np.full(n, END)],
        "ts": np.r_[starts, ends], "end": np.r_[starts, ends], "thread": main,
        "order": np.r_[np.ones(n), np.zeros(n)]})  # at one instant: an end, a start, calls


def _assemble(ev: pd.DataFrame, thread: np.ndarray, parent: np.ndarray, calls: pd.DataFrame,
              markers: pd.DataFrame, numbers: np.ndarray, starts: np.ndarray,
              work: np.ndarray, in_window: np.ndarray, caller: np.ndarray,
              stream_of: dict[int, int]) -> Graph:
    ts, end = ev["ts_us"].to_numpy(float), ev["end_us"].to_numpy(float)
    calls = calls.assign(thread=thread[calls["row"].to_numpy(np.int64)], order=2.0)
    table = pd.concat([markers, calls[["row", "kind", "ts", "end", "thread", "order"]]],
                      ignore_index=True)
    table = table.sort_values(["ts", "order"], kind="stable")
    n_mark = len(markers)
    src = table.index.to_numpy()  # < n_mark: a marker; else a row of `calls`
    index_of_row = {r: i for i, r in enumerate(table["row"].to_numpy(np.int64).tolist())
                    if r >= 0}
    gap_lo = _previous_end_on_thread(table)
    # GPU items: carry first (fixed), then the replayed ones in launch order
    replayed = work[in_window]
    item_call_of = np.array([index_of_row[c] for c in caller[in_window].tolist()], np.int64)
    order = np.lexsort((ts[replayed], item_call_of))
    replayed, item_call_of = replayed[order], item_call_of[order]
    carry = _carry(work[~in_window], replayed, ts, stream_of)
    rows = np.r_[carry, replayed].astype(np.int64)
    item_of_row = {r: i for i, r in enumerate(rows.tolist())}
    n_calls = len(table)
    # a call's items are consecutive (sorted by call above)
    at = (np.searchsorted(item_call_of, np.arange(n_calls + 1)) + len(carry)).tolist()
    call_items = [range(at[c], at[c + 1]) for c in range(n_calls)]
    call_waits, is_sync, item_deps = _linked(calls, src, n_mark, item_of_row, len(rows))
    call_step = np.clip(np.searchsorted(starts, table["ts"].to_numpy(float), "right") - 1,
                        0, None)
    marker_step = np.where(src < n_mark, src % max(len(starts), 1), -1)
    call_step = np.where(src < n_mark, marker_step, call_step)
    row = table["row"].to_numpy(np.int64)
    return Graph(
        steps=numbers, main_thread=int(markers["thread"].iloc[0]),
        call_thread=table["thread"].to_numpy(np.int64), call_kind=table["kind"].to_numpy(),
        call_is_sync=is_sync, call_step=call_step.astype(np.int64),
        call_ts_us=table["ts"].to_numpy(float),
        call_dur_us=table["end"].to_numpy(float) - table["ts"].to_numpy(float),
        call_gap_lo_us=gap_lo, call_row=row, call_items=call_items, call_waits=call_waits,
        item_stream=np.array([stream_of[r] for r in rows.tolist()], np.int64),
        item_call=np.r_[np.full(len(carry), -1), item_call_of].astype(np.int64),
        item_ts_us=ts[rows], item_dur_us=end[rows] - ts[rows], item_row=rows,
        item_deps=item_deps, events=ev, row_thread=thread, row_parent=parent)


def _linked(calls: pd.DataFrame, src: np.ndarray, n_mark: int, item_of_row: dict[int, int],
            n_items: int) -> tuple[list[tuple[int, ...]], np.ndarray, list[tuple[int, ...]]]:
    """Per call of the graph (`src`: its row of `calls`, < n_mark: a marker): the items it
    waits for and whether it syncs; per item, the items it waits for through an event. As
    tuples: tuples of numbers are left out of the garbage collector's scans."""
    n_calls = len(src)
    call_waits: list[tuple[int, ...]] = [NONE] * n_calls
    at = np.flatnonzero(src >= n_mark)  # the calls, not the markers
    of = src[at] - n_mark
    is_sync = np.zeros(n_calls, dtype=bool)
    is_sync[at] = calls["is_sync"].to_numpy(bool)[of]
    deps: dict[int, list[int]] = {}
    waits_of, deps_of = calls["waits"].tolist(), calls["deps"].tolist()
    for i, s in zip(at.tolist(), of.tolist(), strict=True):
        waits = waits_of[s]
        if waits:
            call_waits[i] = tuple([item_of_row[r] for r in waits if r in item_of_row])
        for r, dep in deps_of[s]:
            if r in item_of_row and dep in item_of_row:
                deps.setdefault(item_of_row[r], []).append(item_of_row[dep])
    item_deps: list[tuple[int, ...]] = [NONE] * n_items
    for i, d in deps.items():
        item_deps[i] = tuple(d)
    return call_waits, is_sync, item_deps


def _previous_end_on_thread(table: pd.DataFrame) -> np.ndarray:
    """The measured end of the previous call on the same thread (the call's own start for a
    thread's first call)."""
    ends = table["end"].to_numpy(float)
    prev = pd.Series(ends).groupby(table["thread"].to_numpy()).shift(1).to_numpy(float)
    out: np.ndarray = np.where(np.isnan(prev), table["ts"].to_numpy(float), prev)
    return out


def _carry(others: np.ndarray, replayed: np.ndarray, ts: np.ndarray,
           stream_of: dict[int, int]) -> np.ndarray:
    """The GPU work not replayed that precedes every replayed item on its stream."""
    def streams(rows: np.ndarray) -> np.ndarray:
        return np.fromiter((stream_of[r] for r in rows.tolist()), np.int64, len(rows))

    mine, theirs = streams(replayed), streams(others)
    n = int(max(mine.max(initial=-1), theirs.max(initial=-1))) + 1
    first = np.full(n, np.inf)  # each stream's first replayed start (NaN starts skipped)
    np.fmin.at(first, mine, ts[replayed])
    first[np.bincount(mine, minlength=n) == 0] = -np.inf  # no replayed item: none precedes
    keep = others[ts[others] < first[theirs]] if n else others[:0]
    return np.asarray(keep[np.argsort(ts[keep], kind="stable")], dtype=np.int64)
