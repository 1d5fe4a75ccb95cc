"""Where every microsecond of a step goes: eight buckets that sum to the step.

A step's window runs from its CPU start to the later of its CPU end and the end of the last
GPU work it launched (from the previous window's end, when that is later: a GPU tail is
counted once). Every instant of the window goes to exactly one bucket, by the first rule that
holds (docs/analysis.md, "breakdown", has the boundary cases):

| rule | bucket |
| --- | --- |
| a kernel other than NCCL/collective runs | `gpu_compute` |
| only memcpy / memset run | `gpu_memory` |
| only NCCL/collective kernels run (exposed communication) | `gpu_communication` |
| GPU idle; a host thread is in a device sync (`sync.device_syncs`) | `host_sync` |
| GPU idle; a host thread in a collective launching no GPU work (gloo) | `host_communication` |
| GPU idle; a host thread is in a launch call or an op that launches GPU work | `host_launch` |
| GPU idle; a host thread is in an op or region that launches nothing | `host_cpu_work` |
| GPU idle; no traced host event (Python between ops, sleeping, waiting) | `host_untraced` |

autoprof's own work is no bucket: rows under an `autoprof::` label and, in an autoprof run
(the decorated call is a region named after the run, directly inside each `ProfilerStep#N`),
the tail of each step after that region (its bookkeeping and torch's `prof.step()`:
breakdown_loop.py). Where the GPU is idle during it, that time leaves the step
(`autoprof_us`); where the GPU runs, the GPU bucket keeps it. The rest of the step outside
the call is the caller's loop, bucketed like the call: `between_calls_us` is the part of
`step_us` in which the host is between two calls and no GPU work runs (GPU work running then,
the call's own launched before it returned, stays in the GPU buckets, not between calls).

| step | step_us | gpu_compute_us | host_cpu_work_us | ... | autoprof_us | between_calls_us |
| --- | --- | --- | --- | --- | --- | --- |
| 2 | 14062.1 | 377.9 | 11135.0 | ... | 18.2 | 11103.6 |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from autoprof.analysis.kinds import BUCKETS as BUCKETS  # re-exported: scale/heatmap reads it here
from autoprof.analysis.metrics._tree import ancestors, has_ancestor_in
from autoprof.analysis.metrics.breakdown_loop import (
    WHERE_BETWEEN_COLUMNS,
    between_mask,
    between_where,
    drain_ends,
    foreign_work,
    tail_intervals,
    windows,
)
from autoprof.analysis.metrics.breakdown_mean import mean_of
from autoprof.analysis.metrics.breakdown_paint import paint
from autoprof.analysis.metrics.breakdown_where import (
    WHERE_COLUMNS,
    Rows,
    where_table,
)
from autoprof.analysis.metrics.overhead import COLLECTIVE_NAME, COMM_KERNEL
from autoprof.analysis.metrics.stats import (
    isin_mask,
    merge_intervals,
    name_matches,
    ranks_of,
    require_columns,
)
from autoprof.analysis.metrics.steps import launch_mask
from autoprof.analysis.metrics.sync import autoprof_mask, host_syncs

_EXCLUDED = len(BUCKETS)  # the code of autoprof's own, GPU-idle time

MEMORY_CATS = frozenset({"gpu_memcpy", "gpu_memset", "memcpy", "memset"})

STEP_COLUMNS = ["rank", "step", "start_us", "end_us", "step_us",
                *[f"{b}_us" for b in BUCKETS], "autoprof_us", "between_calls_us"]
BETWEEN_COLUMNS = ["rank", "step", *[f"{b}_us" for b in BUCKETS]]

_NEEDS = ["name", "cat", "lane", "is_gpu_work", "ts_us", "end_us", "dur_us", "step", "rank",
          "parent", "op_row"]
_OPTIONAL = ["tid"]  # names the caller's thread between calls; one thread without it


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})


@dataclass(frozen=True)
class Breakdown:
    """`steps`: one row per (rank, step) with the bucket times (STEP_COLUMNS);
    `where`: per rank and bucket, the time each op or region holds outside the time between
    calls (WHERE_COLUMNS), summed over the steps; `between`: per step, each bucket's time
    between calls (BETWEEN_COLUMNS, NaN for a step without a call); `between_where`: per
    rank, what the caller's loop does in the GPU-idle time between calls (`rank`, `name`,
    `us` summed over the steps)."""

    steps: pd.DataFrame
    where: pd.DataFrame
    between: pd.DataFrame = field(default_factory=lambda: _empty(BETWEEN_COLUMNS))
    between_where: pd.DataFrame = field(
        default_factory=lambda: _empty(WHERE_BETWEEN_COLUMNS))
    # for_rank, within_call and mean, each computed once (the tables are not changed after)
    _memo: dict[object, Any] = field(default_factory=dict, init=False, repr=False,
                                     compare=False)

    def for_rank(self, rank: int | None) -> Breakdown:
        if rank is None:
            return self
        if ("rank", rank) in self._memo:
            return cast(Breakdown, self._memo["rank", rank])

        def of(df: pd.DataFrame) -> pd.DataFrame:
            return df[df["rank"] == rank].reset_index(drop=True)

        tables = (self.steps, self.where, self.between, self.between_where)
        own = self if all(_only_rank(df, rank) for df in tables) else Breakdown(
            *(of(df) for df in tables))
        self._memo["rank", rank] = own
        return own

    def within_call(self) -> Breakdown:
        """The steps less their time between calls: each bucket and `step_us` counted inside
        the call only (what an untraced call of the function is compared with)."""
        if "within_call" not in self._memo:
            self._memo["within_call"] = self._within_call()
        return cast(Breakdown, self._memo["within_call"])

    def _within_call(self) -> Breakdown:
        steps = self.steps.copy()
        between = self._between_by_step()
        for b in BUCKETS:
            steps[f"{b}_us"] = steps[f"{b}_us"].to_numpy() - between[f"{b}_us"]
        steps["step_us"] = steps[[f"{b}_us" for b in BUCKETS]].sum(axis=1)
        steps["between_calls_us"] = np.where(steps["between_calls_us"].isna(), np.nan, 0.0)
        return Breakdown(steps, self.where, _empty(BETWEEN_COLUMNS),
                         _empty(WHERE_BETWEEN_COLUMNS))

    def _between_by_step(self) -> dict[str, np.ndarray]:
        """Each bucket's time between calls on the rows of ``steps`` (0 where none): the
        between table's own rows when they are the steps' (as ``breakdown`` builds them),
        else found by (rank, step)."""
        keys = ["rank", "step"]
        if len(self.between) == len(self.steps) and all(
                np.array_equal(self.between[k].to_numpy(), self.steps[k].to_numpy())
                for k in keys):
            found = {f"{b}_us": self.between[f"{b}_us"].to_numpy(dtype=float)
                     for b in BUCKETS}
        else:
            table = self.between.set_index(keys).reindex(
                pd.MultiIndex.from_frame(self.steps[keys]))
            found = {f"{b}_us": table[f"{b}_us"].to_numpy(dtype=float) for b in BUCKETS}
        return {k: np.where(np.isnan(v), 0.0, v) for k, v in found.items()}

    def mean(self) -> dict[str, object]:
        """The summary's `breakdown` (breakdown_mean.mean_of), computed once per breakdown: a
        new top-level dict each call, its nested values shared (read them, do not change
        them)."""
        cached = self._memo.get("mean")
        if cached is None:
            cached = self._memo["mean"] = mean_of(self.steps, self.between, self.between_where)
        return dict(cached)


def _only_rank(df: pd.DataFrame, rank: int) -> bool:
    """Whether every row of `df` is `rank`'s and its index is 0..n-1: its rows for `rank`
    are the table itself."""
    return bool((df["rank"].to_numpy() == rank).all()) and df.index.equals(
        pd.RangeIndex(len(df)))


def breakdown(events: pd.DataFrame, call_region: str | None = None,
              rank: int | None = None) -> Breakdown:
    """The breakdown of every profiled step (of one rank, or of all ranks).

    `call_region`: the name of the region autoprof wraps the decorated call in (the run's
    name); the step's CPU time after it is autoprof's own, the time before it the caller's
    loop (`between_calls_us`). None: no such region, every step is all call.
    A trace without `ProfilerStep#N` spans is one step (`step` -1) from its first to its last
    event.
    """
    require_columns(events, _NEEDS, "breakdown")
    events = events[_NEEDS + [c for c in _OPTIONAL if c in events.columns]]
    ranks = ranks_of(events) if rank is None else [rank]
    parts: list[list[pd.DataFrame]] = [[], [], [], []]
    for r in ranks:
        ev = events[events["rank"].to_numpy() == r] if len(ranks) > 1 or rank is not None \
            else events
        if ev.empty:
            continue
        for part, frame in zip(parts, _rank_breakdown(ev, int(r), call_region), strict=True):
            part.append(frame)
    return Breakdown(_concat(parts[0], STEP_COLUMNS), _concat(parts[1], WHERE_COLUMNS),
                     _concat(parts[2], BETWEEN_COLUMNS),
                     _concat(parts[3], WHERE_BETWEEN_COLUMNS))


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})
    return pd.concat(frames, ignore_index=True)


# --- one rank ---------------------------------------------------------------------------

def _classes(ev: pd.DataFrame, rows: Rows, table: pd.DataFrame, call_region: str | None
             ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, np.ndarray]]:
    """The merged intervals of each class (highest priority first) and the row masks the
    `where` table and the between-calls naming read."""
    own = autoprof_mask(ev)
    foreign = foreign_work(rows, ev["step"].to_numpy(), not (table["step"] == -1).all())
    memory = rows.work & ~foreign & isin_mask(ev["cat"], MEMORY_CATS)
    comm = rows.work & ~foreign & ~memory & name_matches(ev["name"], COMM_KERNEL)
    compute = rows.work & ~foreign & ~memory & ~comm
    user = rows.cpu & ~own & ~rows.step_span
    sync = np.zeros(rows.n, dtype=bool)
    sync[ev.index.get_indexer(host_syncs(ev).index)] = True
    sync &= user
    launch_calls = launch_mask(ev) & user
    launching = ancestors(rows.parent, launch_calls) & user
    launch_ops = launch_calls | (launching & ~rows.region)
    transparent = launching & rows.region  # regions that launch: their gaps are untraced
    transparent |= rows.region & rows.named(call_region) & user
    # a host collective that launches nothing on the GPU (gloo) waits: communication
    host_comm = user & ~launching & ~launch_calls & name_matches(ev["name"], COLLECTIVE_NAME)
    host_comm &= ~has_ancestor_in(rows.parent, host_comm)
    cpu_work = user & ~launch_ops & ~transparent & ~sync & ~host_comm
    outer_sync = sync & ~has_ancestor_in(rows.parent, sync)
    sync_s, sync_e = rows.ts[outer_sync], rows.end[outer_sync]
    drain_e = drain_ends(sync_e, ev["step"].to_numpy()[outer_sync], table,
                          np.sort(rows.ts[rows.work & ~foreign]))
    tail_s, tail_e = tail_intervals(table)
    classes = {  # highest priority first
        "gpu_compute": (rows.ts[compute], rows.end[compute]),
        "gpu_memory": (rows.ts[memory], rows.end[memory]),
        "gpu_communication": (rows.ts[comm], rows.end[comm]),
        "own": (np.concatenate([rows.ts[own], tail_s]), np.concatenate([rows.end[own], tail_e])),
        "host_sync": (sync_s, sync_e),
        "drain": (sync_e, drain_e),
        "host_communication": (rows.ts[host_comm], rows.end[host_comm]),
        "host_launch": (rows.ts[launch_ops], rows.end[launch_ops]),
        "host_cpu_work": (rows.ts[cpu_work], rows.end[cpu_work]),
    }
    masks = {"user": user, "outer_sync": outer_sync, "launch_ops": launch_ops,
             "cpu_work": cpu_work, "memory": memory, "comm": comm, "host_comm": host_comm,
             "transparent": transparent, "sync_s": sync_s, "sync_e": sync_e, "drain_e": drain_e}
    return {k: merge_intervals(*v) for k, v in classes.items()}, masks


def _paint(merged: dict[str, tuple[np.ndarray, np.ndarray]], table: pd.DataFrame
           ) -> tuple[np.ndarray, np.ndarray]:
    """The boundaries of every class, window and call, and each segment's code (its bucket's
    index, _EXCLUDED for autoprof's own): breakdown_paint.paint."""
    codes = {key: _EXCLUDED if key == "own" else BUCKETS.index(
        "host_sync" if key == "drain" else key) for key in merged}
    return paint(merged, table, codes, BUCKETS.index("host_untraced"))


def _rank_breakdown(ev: pd.DataFrame, rank: int, call_region: str | None,
                    segments: list[pd.DataFrame] | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One rank's steps, where, between-calls buckets and between-calls names."""
    rows = Rows(ev)
    table = windows(ev, rows, call_region)
    merged, m = _classes(ev, rows, table, call_region)
    points, code = _paint(merged, table)
    del merged  # freed before the where tables, the rank's largest step
    width = len(BUCKETS) + 1
    empty = pd.DataFrame(columns=WHERE_COLUMNS)
    if len(points) < 2:
        zeros = np.zeros((len(table), width))
        return (_step_frame(rank, table, zeros, zeros), empty, _between_frame(rank, table, zeros),
                pd.DataFrame(columns=WHERE_BETWEEN_COLUMNS))
    mid = (points[:-1] + points[1:]) / 2
    length = np.diff(points)
    starts, ends = table["start"].to_numpy(float), table["end"].to_numpy(float)
    win = np.searchsorted(starts, mid, "right") - 1
    ok = (win >= 0) & (mid < ends[np.clip(win, 0, None)])
    totals = _per_window(win, code, length, ok, len(table), width)
    host = (code >= BUCKETS.index("host_launch")) & (code < _EXCLUDED)
    between = between_mask(table, mid, win, ok) & host  # the GPU waits on the caller's loop
    between_totals = _per_window(win, code, length, between, len(table), width)
    del length
    if segments is not None:
        segments.append(_segments(points, code, ok, rank))
        return (_step_frame(rank, table, totals, between_totals), empty,
                _between_frame(rank, table, between_totals),
                pd.DataFrame(columns=WHERE_BETWEEN_COLUMNS))
    named = between_where(ev, rows, m["user"], call_region, points, between, rank)
    in_call = ok & ~between  # the holders of the buckets inside the call
    return (_step_frame(rank, table, totals, between_totals), _where(rows, points, code,
                                                                     in_call, rank, m),
            _between_frame(rank, table, between_totals), named)


def _per_window(win: np.ndarray, code: np.ndarray, length: np.ndarray, keep: np.ndarray,
                windows_n: int, width: int) -> np.ndarray:
    """Per window and code: the summed length of the kept segments."""
    return np.bincount(win[keep] * width + code[keep], weights=length[keep],
                       minlength=windows_n * width).reshape(windows_n, width)


def _where(rows: Rows, points: np.ndarray, code: np.ndarray, ok: np.ndarray, rank: int,
           m: dict[str, np.ndarray]) -> pd.DataFrame:
    """The holders of each bucket's time (breakdown_where.where_table)."""
    sync_s, sync_e, drain_e = m["sync_s"], m["sync_e"], m["drain_e"]
    # a sync holds its own drain up to the next sync (drains of back-to-back syncs overlap)
    order = np.argsort(sync_s, kind="stable")
    next_start = np.full(len(sync_s), np.inf)
    next_start[order[:-1]] = sync_s[order[1:]]
    holders = {
        "host_sync": (m["outer_sync"], sync_s,
                      np.maximum(sync_e, np.minimum(drain_e, next_start))),
        "host_launch": (m["launch_ops"], None, None),
        "host_cpu_work": (m["cpu_work"], None, None),
        "gpu_memory": (m["memory"], None, None),
        "gpu_communication": (m["comm"], None, None),
        "host_communication": (m["host_comm"], None, None),
    }
    return where_table(rows, points, code, ok, rank, holders,
                       m["transparent"] | (rows.region & m["user"]),
                       {b: i for i, b in enumerate(BUCKETS)})


def _segments(points: np.ndarray, code: np.ndarray, ok: np.ndarray, rank: int
              ) -> pd.DataFrame:
    """Stretches of one host bucket inside the step windows (runs of equal code merged)."""
    host = ok & (code >= BUCKETS.index("host_launch")) & (code < _EXCLUDED)
    idx = np.flatnonzero(host)
    if not len(idx):
        return pd.DataFrame({"rank": [], "start_us": [], "end_us": [], "bucket": []})
    # a new stretch where the code changes or a segment is skipped
    new = np.ones(len(idx), dtype=bool)
    new[1:] = (np.diff(idx) != 1) | (np.diff(code[idx]) != 0)
    first = idx[new]
    last = idx[np.concatenate([np.flatnonzero(new)[1:] - 1, [len(idx) - 1]])]
    return pd.DataFrame({"rank": rank, "start_us": points[first], "end_us": points[last + 1],
                         "bucket": np.asarray(BUCKETS, dtype=object)[code[first]]})


def idle_segments(events: pd.DataFrame, call_region: str | None = None,
                  rank: int | None = None) -> pd.DataFrame:
    """Every stretch of GPU-idle step time with its host bucket: `rank`, `start_us`, `end_us`,
    `bucket` (for drawing; the same classification as `breakdown`)."""
    require_columns(events, _NEEDS, "idle_segments")
    events = events[_NEEDS + [c for c in _OPTIONAL if c in events.columns]]
    out: list[pd.DataFrame] = []
    for r in (ranks_of(events) if rank is None else [rank]):
        ev = events[events["rank"].to_numpy() == r]
        if len(ev):
            _rank_breakdown(ev, int(r), call_region, out)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        {"rank": [], "start_us": [], "end_us": [], "bucket": []})


def _step_frame(rank: int, table: pd.DataFrame, totals: np.ndarray,
                between: np.ndarray) -> pd.DataFrame:
    """Per step: its window and each bucket's time (one frame built from its columns, not
    a column set at a time)."""
    columns: dict[str, object] = {
        "rank": rank, "step": table["step"].to_numpy(np.int64),
        "start_us": table["start"].to_numpy(float), "end_us": table["end"].to_numpy(float),
        "step_us": totals[:, :len(BUCKETS)].sum(axis=1)}
    columns.update({f"{b}_us": totals[:, i] for i, b in enumerate(BUCKETS)})
    columns["autoprof_us"] = totals[:, _EXCLUDED]
    columns["between_calls_us"] = np.where(table["has_call"].to_numpy(bool),
                                           between[:, :len(BUCKETS)].sum(axis=1), np.nan)
    return pd.DataFrame(columns)


def _between_frame(rank: int, table: pd.DataFrame, between: np.ndarray) -> pd.DataFrame:
    """Per step: each bucket's time between calls (NaN for a step without a call)."""
    has = table["has_call"].to_numpy(bool)
    columns: dict[str, object] = {"rank": rank, "step": table["step"].to_numpy(np.int64)}
    columns.update({f"{b}_us": np.where(has, between[:, i], np.nan)
                    for i, b in enumerate(BUCKETS)})
    return pd.DataFrame(columns)
