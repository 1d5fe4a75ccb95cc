"""Memory: the peak per device, the timeline, per step, and who allocated it.

Input: the memory table (loader/memory.py: one row per allocation or free, with the
allocator's totals after it) and the events table. Each allocation is tied to the innermost
CPU op (``cpu_op``) and the innermost region (``record_function``, a ``user_annotation``)
open on the same thread at its timestamp; an allocation on a thread with no open region
(the autograd engine's, during ``backward()``) goes to the innermost region open at that
time on another thread of the process. Steps are the ``ProfilerStep#N`` spans.

| ts_us | device | bytes | allocated_bytes | step | region | op |
| --- | --- | --- | --- | --- | --- | --- |
| 120.5 | cpu | 1048576 | 2098152 | 3 | alloc_b | aten::empty |
| 130.0 | cpu | -1000 | 2097152 | 3 | (no region) | (no op) |

A region's ``allocated_bytes_per_step`` counts only what it allocated itself (not its
nested regions), averaged over the profiled steps; its ``peak_bytes`` is the most the
device held at any moment while the region was open (entry included), nested work and
other threads included.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.memory_owners import (
    NO_OP,
    NO_REGION,
    IntArray,
    op_of,
    region_mask,
    region_of,
    step_of,
)
from autoprof.analysis.metrics.stats import (
    require_columns,
    step_rows,
)

BEFORE_WINDOW = "(allocated before the profiled window)"
TIMELINE_COLUMNS = ["ts_us", "rank", "device", "allocated_bytes", "reserved_bytes", "bytes",
                    "step", "region", "op", "addr"]
DEVICE_COLUMNS = ["rank", "device", "peak_allocated_bytes", "peak_reserved_bytes",
                  "capacity_bytes", "reserved_pct", "peak_step", "peak_ts_us", "allocations",
                  "frees"]
STEP_COLUMNS = ["rank", "device", "step", "start_allocated_bytes", "peak_bytes",
                "end_allocated_bytes", "growth_bytes", "allocated_bytes", "freed_bytes",
                "allocations", "frees"]
SITE_COLUMNS = ["rank", "device", "name", "allocations", "allocated_bytes",
                "allocated_bytes_per_step", "peak_bytes", "live_at_peak_bytes"]

_NEEDS = ["name", "cat", "lane", "rank", "pid", "tid", "ts_us", "end_us", "parent"]


class Memory:
    """What the memory events say (every table's columns are the constants above).

    ``devices`` (the peaks), ``steps``, ``by_region`` and ``live_by_region`` are computed
    with it: the summary prints them and the memory checks read them. ``timeline`` (one row
    per event with its op), ``by_op``, ``live_at_peak`` (by region and op) and ``marks`` are
    computed on first use (the viewer's Memory page) and kept: finding each event's op is
    as much work again as finding its region."""

    def __init__(self, events: pd.DataFrame, rows: pd.DataFrame, spans: pd.DataFrame,
                 capacity: dict[str, int]) -> None:
        self._events, self._rows, self._spans = events, rows, spans  # rows: with step, region
        self._regions = _region_spans(events)
        freed_at = _free_index(rows)
        peaks = _peak_rows(rows)
        self._live = _live_rows(rows, freed_at, peaks)
        self._n_steps = {int(r): max(1, int((spans["rank"] == r).sum()))
                         for r in rows["rank"].unique()}
        self.devices: pd.DataFrame = _devices(rows, peaks, capacity)  # one row per (rank, device)
        self.steps: pd.DataFrame = _steps(rows)  # one row per (rank, device, step) with events
        self.live_by_region: pd.DataFrame = _live_table(rows, self._live, ["region"])
        self.by_region: pd.DataFrame = _sites_table(  # largest allocated_bytes_per_step first
            rows, "region", NO_REGION, self._n_steps, self.live_by_region, self._regions)

    @cached_property
    def timeline(self) -> pd.DataFrame:
        """One row per event, sorted by (rank, device, ts_us), with its step, region and op."""
        return self._rows.assign(op=op_of(self._events, self._rows))[TIMELINE_COLUMNS]

    @cached_property
    def live_at_peak(self) -> pd.DataFrame:
        """rank, device, region, op, bytes: what was live at each device's peak."""
        return _live_table(self.timeline, self._live, ["region", "op"])

    @cached_property
    def by_op(self) -> pd.DataFrame:
        return _sites_table(self.timeline, "op", NO_OP, self._n_steps, self.live_at_peak, None)

    @cached_property
    def marks(self) -> pd.DataFrame:
        """rank, kind ("step"/"region"), name, start_us, end_us (for charts)."""
        return _marks(self._spans, self._regions, self._rows)


def timeline_of(memory: Memory | None) -> pd.DataFrame:
    """The timeline, or an empty one with the same columns when there are no memory events."""
    if memory is None:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("device", "region", "op")
                                          else float) for c in TIMELINE_COLUMNS})
    return memory.timeline


def memory_analysis(events: pd.DataFrame, memory: pd.DataFrame,
                    capacity: dict[str, int] | None = None) -> Memory | None:
    """Everything above; None when the run has no memory events."""
    if memory is None or not len(memory):
        return None
    require_columns(events, _NEEDS, "memory analysis")
    require_columns(memory, ["ts_us", "pid", "tid", "device", "bytes", "allocated_bytes",
                             "reserved_bytes", "addr", "rank"], "memory analysis (memory table)")
    mem = memory.assign(device=memory["device"].astype(str)).sort_values(
        ["rank", "device", "ts_us"], kind="stable").reset_index(drop=True)
    spans = step_rows(events)
    rows = mem.assign(step=step_of(mem, spans), region=region_of(events, mem))
    return Memory(events, rows, spans, capacity or {})


# --- attribution --------------------------------------------------------------------------

def _free_index(tl: pd.DataFrame) -> IntArray:
    """For each allocation row, the row of its free (same rank, device and address, the next
    event there), else a large number (still live at the end); -1 for frees."""
    n = len(tl)
    out = np.where(tl["bytes"].to_numpy() > 0, np.iinfo(np.int64).max, -1).astype(np.int64)
    if n < 2:
        return out
    dev = pd.factorize(tl["device"])[0]
    order = np.lexsort((np.arange(n), tl["addr"].to_numpy(), dev, tl["rank"].to_numpy()))
    addr, size = tl["addr"].to_numpy()[order], tl["bytes"].to_numpy()[order]
    same = ((addr[1:] == addr[:-1]) & (dev[order][1:] == dev[order][:-1])
            & (tl["rank"].to_numpy()[order][1:] == tl["rank"].to_numpy()[order][:-1]))
    paired = same & (size[:-1] > 0) & (size[1:] < 0)
    out[order[:-1][paired]] = order[1:][paired]
    return out


# --- tables -------------------------------------------------------------------------------

def _groups(tl: pd.DataFrame) -> list[tuple[int, str, IntArray]]:
    """(rank, device, rows) for each device, rows in time order (the timeline's order)."""
    keys = tl[["rank", "device"]]
    out = []
    for (rank, device), rows in keys.groupby(["rank", "device"], sort=True).indices.items():
        out.append((int(rank), str(device), np.sort(np.asarray(rows, dtype=np.int64))))
    return out


def _peak_rows(tl: pd.DataFrame) -> dict[tuple[int, str], int]:
    """The first row at which each device's allocated total reaches its maximum."""
    allocated = tl["allocated_bytes"].to_numpy()
    return {(r, d): int(rows[np.argmax(allocated[rows])]) for r, d, rows in _groups(tl)}


def _devices(tl: pd.DataFrame, peaks: dict[tuple[int, str], int],
             capacity: dict[str, int]) -> pd.DataFrame:
    rows = []
    for rank, device, idx in _groups(tl):
        at = peaks[(rank, device)]
        size = tl["bytes"].to_numpy()[idx]
        step = int(tl["step"].iat[at])
        reserved = int(tl["reserved_bytes"].to_numpy()[idx].max())  # -1: never in the trace
        cap = capacity.get(device)
        rows.append({"rank": rank, "device": device,
                     "reserved_pct": 100 * reserved / cap if cap and reserved >= 0 else None,
                     "peak_allocated_bytes": int(tl["allocated_bytes"].iat[at]),
                     "peak_reserved_bytes": reserved if reserved >= 0 else None,
                     "capacity_bytes": cap,
                     "peak_step": step if step >= 0 else None,
                     "peak_ts_us": float(tl["ts_us"].iat[at]),
                     "allocations": int((size > 0).sum()), "frees": int((size < 0).sum())})
    out = pd.DataFrame(rows, columns=DEVICE_COLUMNS)
    for column in ("capacity_bytes", "peak_step", "peak_reserved_bytes", "reserved_pct"):
        out[column] = pd.Series([r[column] for r in rows], dtype=object)
    return out


def _steps(tl: pd.DataFrame) -> pd.DataFrame:
    inside = tl[tl["step"] >= 0]
    if not len(inside):
        return pd.DataFrame(columns=STEP_COLUMNS)
    size = inside["bytes"]
    grouped = inside.assign(
        before=inside["allocated_bytes"] - size, alloc=size.clip(lower=0),
        freed=(-size).clip(lower=0), is_alloc=size > 0, is_free=size < 0,
    ).groupby(["rank", "device", "step"], sort=True)
    out = grouped.agg(start_allocated_bytes=("before", "first"),
                      peak_after=("allocated_bytes", "max"),
                      end_allocated_bytes=("allocated_bytes", "last"),
                      allocated_bytes=("alloc", "sum"), freed_bytes=("freed", "sum"),
                      allocations=("is_alloc", "sum"), frees=("is_free", "sum")).reset_index()
    out["peak_bytes"] = np.maximum(out["peak_after"], out["start_allocated_bytes"])
    out["growth_bytes"] = out["end_allocated_bytes"] - out["start_allocated_bytes"]
    return out[STEP_COLUMNS].astype({c: np.int64 for c in STEP_COLUMNS[2:]})


def _live_rows(tl: pd.DataFrame, freed_at: IntArray, peaks: dict[tuple[int, str], int]
               ) -> dict[tuple[int, str], tuple[IntArray, int]]:
    """Per device: the allocation rows still live at its peak, and its peak row."""
    out = {}
    size = tl["bytes"].to_numpy()
    ranks, devices = tl["rank"].to_numpy(), tl["device"].to_numpy()
    for (rank, device), at in peaks.items():
        rows = np.flatnonzero((ranks == rank) & (devices == device))
        out[(rank, device)] = (rows[(rows <= at) & (size[rows] > 0) & (freed_at[rows] > at)], at)
    return out


def _live_table(tl: pd.DataFrame, live: dict[tuple[int, str], tuple[IntArray, int]],
                by: list[str]) -> pd.DataFrame:
    """Per device, the bytes live at its peak grouped by the ``by`` columns (region, or
    region and op), largest first; what the totals held before the first recorded event is
    one row of its own."""
    columns = ["rank", "device", *by, "bytes"]
    parts = []
    for (rank, device), (rows, at) in live.items():
        part = tl.iloc[rows].groupby(by, sort=False)["bytes"].sum().reset_index()
        unknown = int(tl["allocated_bytes"].iat[at]) - int(part["bytes"].sum())
        if unknown > 0:
            part = pd.concat([part, pd.DataFrame(
                {**{c: [BEFORE_WINDOW] for c in by}, "bytes": [unknown]})])
        parts.append(part.assign(rank=rank, device=device))
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True)[columns]
    return out.sort_values("bytes", ascending=False, kind="stable").reset_index(drop=True)


def _region_spans(events: pd.DataFrame) -> pd.DataFrame:
    spans = events.loc[region_mask(events), ["rank", "name", "ts_us", "end_us"]]
    return spans.assign(name=spans["name"].astype(str))


def _peak_inside(tl: pd.DataFrame, spans: pd.DataFrame) -> dict[tuple[int, str, str], int]:
    """(rank, device, region name) -> the most the device held while the region was open."""
    out: dict[tuple[int, str, str], int] = {}
    allocated = tl["allocated_bytes"].to_numpy()
    ts_all = tl["ts_us"].to_numpy(float)
    for rank, device, rows in _groups(tl):
        ts, held = ts_all[rows], allocated[rows]
        before = held - tl["bytes"].to_numpy()[rows]
        mine = spans[spans["rank"] == rank]
        lo = np.searchsorted(ts, mine["ts_us"].to_numpy(float), side="left")
        hi = np.searchsorted(ts, mine["end_us"].to_numpy(float), side="right")
        for name, a, b in zip(mine["name"].tolist(), lo.tolist(), hi.tolist(), strict=True):
            entry = int(held[a - 1]) if a > 0 else int(before[0])
            peak = max(entry, int(held[a:b].max())) if b > a else entry
            key = (rank, device, name)
            out[key] = max(out.get(key, peak), peak)
    return out


def _sites_table(tl: pd.DataFrame, column: str, missing: str, n_steps: dict[int, int],
                 live: pd.DataFrame, spans: pd.DataFrame | None) -> pd.DataFrame:
    allocs = tl[(tl["bytes"] > 0) & ~tl[column].str.startswith("autoprof::")]
    grouped = allocs.groupby(["rank", "device", column], sort=False)["bytes"]
    out = pd.DataFrame({"allocations": grouped.size(), "allocated_bytes": grouped.sum()})
    out = out.reset_index().rename(columns={column: "name"})
    steps = out["rank"].map(n_steps).fillna(1).to_numpy(float)
    out["allocated_bytes_per_step"] = out["allocated_bytes"].to_numpy(float) / steps
    held = live.groupby(["rank", "device", column])["bytes"].sum()
    keys = list(zip(out["rank"], out["device"], out["name"], strict=True))
    out["live_at_peak_bytes"] = [int(held.get(k, 0)) for k in keys]
    if spans is not None:
        inside = _peak_inside(tl, spans)
        out["peak_bytes"] = [inside.get(k) for k in keys]
    else:  # ops: the most the device held right after one of the op's own allocations
        out["peak_bytes"] = allocs.groupby(["rank", "device", column], sort=False)[
            "allocated_bytes"].max().to_numpy()
    out = out[SITE_COLUMNS].sort_values(["allocated_bytes_per_step", "name"],
                                        ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


MAX_REGION_MARKS = 1000


def _marks(spans: pd.DataFrame, regions: pd.DataFrame, tl: pd.DataFrame,
           top: int = 8) -> pd.DataFrame:
    """Step spans and the spans of the ``top`` regions that allocate most, for charts (at
    most MAX_REGION_MARKS region spans: the longest)."""
    steps = pd.DataFrame({"rank": spans["rank"], "kind": "step",
                          "name": spans["name"].astype(str), "start_us": spans["ts_us"],
                          "end_us": spans["end_us"]})
    allocs = tl[(tl["bytes"] > 0) & (tl["region"] != NO_REGION)]
    biggest = allocs.groupby("region")["bytes"].sum().nlargest(top).index
    shown = regions[regions["name"].isin(biggest)]
    if len(shown) > MAX_REGION_MARKS:
        length = shown["end_us"] - shown["ts_us"]
        shown = shown.loc[length.nlargest(MAX_REGION_MARKS).index].sort_values("ts_us")
    marks = pd.DataFrame({"rank": shown["rank"], "kind": "region", "name": shown["name"],
                          "start_us": shown["ts_us"], "end_us": shown["end_us"]})
    return pd.concat([steps, marks], ignore_index=True)


def plot_points(timeline: pd.DataFrame, max_points: int = 4000) -> pd.DataFrame:
    """The timeline thinned for a chart: per device, at most about ``max_points`` rows, keeping
    in each time bin the rows with the lowest and highest allocated total (peaks survive)."""
    parts = []
    for _, group in timeline.groupby(["rank", "device"], sort=True):
        if len(group) <= max_points:
            parts.append(group)
            continue
        ts = group["ts_us"].to_numpy(float)
        bins = np.minimum(((ts - ts[0]) / max(ts[-1] - ts[0], 1e-9) * (max_points // 2))
                          .astype(np.int64), max_points // 2 - 1)
        held = group.assign(bin=bins)["allocated_bytes"].groupby(bins)
        keep = np.unique(np.concatenate([held.idxmax().to_numpy(), held.idxmin().to_numpy(),
                                         group.index[[0, -1]].to_numpy()]))
        parts.append(group.loc[keep])
    if not parts:
        return timeline
    return pd.concat(parts).sort_values(["rank", "device", "ts_us"], kind="stable")
