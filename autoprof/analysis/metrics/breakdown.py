"""Where every microsecond of a step goes: seven buckets that sum to the step.

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
| GPU idle; a host thread is in a launch call or an op that launches GPU work | `host_launch` |
| GPU idle; a host thread is in an op or region that launches nothing | `host_cpu_work` |
| GPU idle; no traced host event (Python between ops, sleeping, waiting) | `host_untraced` |

autoprof's own work is no bucket: rows under an `autoprof::` label and, in an autoprof run
(the decorated call is a region named after the run, directly inside each `ProfilerStep#N`),
the step's CPU time outside that region. Where the GPU is idle during it, that time leaves
the step (`autoprof_us`); where the GPU runs, the GPU bucket keeps it.

| step | step_us | gpu_compute_us | host_launch_us | host_sync_us | ... | autoprof_us |
| --- | --- | --- | --- | --- | --- | --- |
| 2 | 145.0 | 3.1 | 120.4 | 0.0 | ... | 180.2 |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from autoprof.analysis.metrics._tree import ancestors, has_ancestor_in, subtree
from autoprof.analysis.metrics.breakdown_where import (
    WHERE_COLUMNS,
    Rows,
    where_table,
)
from autoprof.analysis.metrics.overhead import COMM_KERNEL
from autoprof.analysis.metrics.stats import (
    isin_mask,
    merge_intervals,
    name_matches,
    ranks_of,
    require_columns,
    step_rows,
)
from autoprof.analysis.metrics.steps import launch_mask
from autoprof.analysis.metrics.sync import autoprof_mask, host_syncs

Bucket = Literal["gpu_compute", "gpu_memory", "gpu_communication", "host_launch", "host_sync",
                 "host_cpu_work", "host_untraced"]
BUCKETS: tuple[Bucket, ...] = ("gpu_compute", "gpu_memory", "gpu_communication", "host_launch",
                               "host_sync", "host_cpu_work", "host_untraced")
GPU_BUCKETS: tuple[Bucket, ...] = BUCKETS[:3]
HOST_BUCKETS: tuple[Bucket, ...] = BUCKETS[3:]
_EXCLUDED = len(BUCKETS)  # the code of autoprof's own, GPU-idle time

MEMORY_CATS = frozenset({"gpu_memcpy", "gpu_memset", "memcpy", "memset"})

STEP_COLUMNS = ["rank", "step", "start_us", "end_us", "step_us",
                *[f"{b}_us" for b in BUCKETS], "autoprof_us"]

_NEEDS = ["name", "cat", "lane", "is_gpu_work", "ts_us", "end_us", "dur_us", "step", "rank",
          "parent", "op_row"]


@dataclass(frozen=True)
class Breakdown:
    """`steps`: one row per (rank, step) with the bucket times (STEP_COLUMNS);
    `where`: per rank and bucket, the time each op or region holds (WHERE_COLUMNS), summed
    over the steps."""

    steps: pd.DataFrame
    where: pd.DataFrame

    def for_rank(self, rank: int | None) -> Breakdown:
        if rank is None:
            return self
        return Breakdown(self.steps[self.steps["rank"] == rank].reset_index(drop=True),
                         self.where[self.where["rank"] == rank].reset_index(drop=True))

    def mean(self) -> dict[str, object]:
        """The summary's `breakdown`: mean step time and mean bucket times over the steps,
        `autoprof_us` (autoprof's own time left out, mean) and `per_step` (each step's)."""
        steps = self.steps
        n = len(steps)
        step_us = float(steps["step_us"].mean()) if n else 0.0
        buckets = {b: float(steps[f"{b}_us"].mean()) if n else 0.0 for b in BUCKETS}
        pct = {b: 100.0 * v / step_us if step_us > 0 else 0.0 for b, v in buckets.items()}
        per_step = [{"rank": int(r["rank"]), "step": int(r["step"]),
                     "step_us": float(r["step_us"]),
                     "buckets_us": {b: float(r[f"{b}_us"]) for b in BUCKETS}}
                    for r in steps.to_dict(orient="records")]
        return {"step_us": step_us, "buckets_us": buckets, "buckets_pct": pct,
                "steps": n,
                "autoprof_us": float(steps["autoprof_us"].mean()) if n else 0.0,
                "per_step": per_step}


def breakdown(events: pd.DataFrame, call_region: str | None = None,
              rank: int | None = None) -> Breakdown:
    """The breakdown of every profiled step (of one rank, or of all ranks).

    `call_region`: the name of the region autoprof wraps the decorated call in (the run's
    name); the step's CPU time outside it is autoprof's own. None: no such region.
    A trace without `ProfilerStep#N` spans is one step (`step` -1) from its first to its last
    event.
    """
    require_columns(events, _NEEDS, "breakdown")
    events = events[_NEEDS]
    ranks = ranks_of(events) if rank is None else [rank]
    steps, where = [], []
    for r in ranks:
        ev = events[events["rank"].to_numpy() == r] if len(ranks) > 1 or rank is not None \
            else events
        if ev.empty:
            continue
        s, w = _rank_breakdown(ev, int(r), call_region)
        steps.append(s)
        where.append(w)
    return Breakdown(_concat(steps, STEP_COLUMNS), _concat(where, WHERE_COLUMNS))


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})
    return pd.concat(frames, ignore_index=True)


# --- the rows of one rank, as positions -----------------------------------------------------


# --- one rank ---------------------------------------------------------------------------

def _windows(ev: pd.DataFrame, rows: Rows, call_region: str | None
             ) -> tuple[pd.DataFrame, np.ndarray]:
    """Per step: (step, start, end, call_start, call_end), tiled; and the mask of the CPU
    rows that are autoprof's own work outside the call region."""
    steps = step_rows(ev)
    step_col = ev["step"].to_numpy()
    own = np.zeros(rows.n, dtype=bool)
    if steps.empty:
        lo = float(np.min(rows.ts)) if rows.n else 0.0
        hi = float(np.max(rows.end)) if rows.n else 0.0
        table = pd.DataFrame({"step": [-1], "start": [lo], "cpu_end": [hi],
                              "call_start": [lo], "call_end": [hi]})
    else:
        pos = ev.index.get_indexer(steps.index)
        table = pd.DataFrame({"step": steps["step_no"].to_numpy(),
                              "start": steps["ts_us"].to_numpy(float),
                              "cpu_end": steps["end_us"].to_numpy(float)})
        table["call_start"], table["call_end"] = table["start"], table["cpu_end"]
        if call_region is not None:
            calls = np.flatnonzero(rows.region & rows.named(call_region))
            calls = calls[np.isin(rows.parent[calls], pos)]
            if len(calls):
                at = pd.Series(np.arange(len(pos)), index=pos)[rows.parent[calls]].to_numpy()
                table.loc[at, "call_start"] = rows.ts[calls]
                table.loc[at, "call_end"] = rows.end[calls]
                has_call = np.zeros(len(pos), dtype=bool)
                has_call[at] = True
                # direct children of a step with a call region, other than that region
                step_parent = np.isin(rows.parent, pos[has_call])
                not_call = np.ones(rows.n, dtype=bool)
                not_call[calls] = False
                own = subtree(rows.parent, step_parent & not_call)
    table["step_start"] = table["start"]
    gpu_end = pd.Series(rows.end[rows.work]).groupby(step_col[rows.work]).max()
    table["gpu_end"] = table["step"].map(gpu_end).astype(float)
    table["end"] = np.fmax(table["cpu_end"].to_numpy(), table["gpu_end"].to_numpy())
    prev_end = np.maximum.accumulate(table["end"].to_numpy())
    table["start"] = np.maximum(table["start"].to_numpy(),
                                np.concatenate([[-np.inf], prev_end[:-1]]))
    table["end"] = np.maximum(table["end"], table["start"])
    return table, own


def _rank_breakdown(ev: pd.DataFrame, rank: int, call_region: str | None,
                    segments: list[pd.DataFrame] | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = Rows(ev)
    table, own = _windows(ev, rows, call_region)
    own |= autoprof_mask(ev)
    memory = rows.work & isin_mask(ev["cat"], MEMORY_CATS)
    comm = rows.work & ~memory & name_matches(ev["name"], COMM_KERNEL)
    compute = rows.work & ~memory & ~comm
    user = rows.cpu & ~own & ~rows.step_span
    sync = np.zeros(rows.n, dtype=bool)
    sync[ev.index.get_indexer(host_syncs(ev).index)] = True
    sync &= user
    launch_calls = launch_mask(ev) & user
    launching = ancestors(rows.parent, launch_calls) & user
    launch_ops = launch_calls | (launching & ~rows.region)
    transparent = launching & rows.region  # regions that launch: their gaps are untraced
    transparent |= rows.region & rows.named(call_region) & user
    cpu_work = user & ~launch_ops & ~transparent & ~sync

    def span(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return rows.ts[mask], rows.end[mask]

    launch_s, launch_e = merge_intervals(*span(launch_ops))
    sync_s, sync_e = span(sync & ~has_ancestor_in(rows.parent, sync))
    drain_e = _drain_ends(sync_e, ev["step"].to_numpy()[sync & ~has_ancestor_in(
        rows.parent, sync)], table, np.sort(rows.ts[rows.work]))
    own_s, own_e = _own_time(table)
    classes = {  # highest priority first
        "gpu_compute": span(compute),
        "gpu_memory": span(memory),
        "gpu_communication": span(comm),
        "own": (np.concatenate([rows.ts[own], own_s]), np.concatenate([rows.end[own], own_e])),
        "host_sync": (sync_s, sync_e),
        "drain": (sync_e, drain_e),
        "host_launch": (launch_s, launch_e),
        "host_cpu_work": span(cpu_work),
    }
    merged = {k: merge_intervals(*v) for k, v in classes.items()}
    points = np.unique(np.concatenate(
        [table["start"].to_numpy(float), table["end"].to_numpy(float),
         *[np.concatenate([s, e]) for s, e in merged.values()]]))
    width = len(BUCKETS) + 1
    if len(points) < 2:
        return _step_frame(rank, table, np.zeros((len(table), width))), \
            pd.DataFrame(columns=WHERE_COLUMNS)
    mid = (points[:-1] + points[1:]) / 2
    length = np.diff(points)
    code = np.full(len(mid), BUCKETS.index("host_untraced"))
    for key in reversed(list(merged)):  # lowest priority first: higher ones overwrite
        s, e = merged[key]
        inside = (np.searchsorted(s, mid, "right") - np.searchsorted(e, mid, "right")) > 0
        code[inside] = _EXCLUDED if key == "own" else BUCKETS.index(
            "host_sync" if key == "drain" else key)
    starts, ends = table["start"].to_numpy(float), table["end"].to_numpy(float)
    win = np.searchsorted(starts, mid, "right") - 1
    ok = (win >= 0) & (mid < ends[np.clip(win, 0, None)])
    totals = np.bincount(win[ok] * width + code[ok], weights=length[ok],
                         minlength=len(table) * width).reshape(len(table), width)
    outer_sync = sync & ~has_ancestor_in(rows.parent, sync)
    # a sync holds its own drain up to the next sync (drains of back-to-back syncs overlap)
    order = np.argsort(sync_s, kind="stable")
    next_start = np.full(len(sync_s), np.inf)
    next_start[order[:-1]] = sync_s[order[1:]]
    holders = {
        "host_sync": (outer_sync, sync_s,
                      np.maximum(sync_e, np.minimum(drain_e, next_start))),
        "host_launch": (launch_ops, None, None),
        "host_cpu_work": (cpu_work, None, None),
        "gpu_memory": (memory, None, None),
        "gpu_communication": (comm, None, None),
    }
    if segments is not None:
        segments.append(_segments(points, code, ok, rank))
        return _step_frame(rank, table, totals), pd.DataFrame(columns=WHERE_COLUMNS)
    where = where_table(rows, points, code, ok, rank, holders, transparent | (rows.region & user),
                        {b: i for i, b in enumerate(BUCKETS)})
    return _step_frame(rank, table, totals), where


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
    events = events[_NEEDS]
    out: list[pd.DataFrame] = []
    for r in (ranks_of(events) if rank is None else [rank]):
        ev = events[events["rank"].to_numpy() == r]
        if len(ev):
            _rank_breakdown(ev, int(r), call_region, out)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        {"rank": [], "start_us": [], "end_us": [], "bucket": []})


def _drain_ends(sync_end: np.ndarray, sync_step: np.ndarray, table: pd.DataFrame,
                work_starts: np.ndarray) -> np.ndarray:
    """Where the drain after each sync ends: the start of the next GPU work or the end of the
    sync's own step (its call region), whichever comes first."""
    if not len(sync_end):
        return sync_end.copy()
    inf = np.inf

    def next_after(sorted_starts: np.ndarray) -> np.ndarray:
        i = np.searchsorted(sorted_starts, sync_end, "left")
        padded = np.concatenate([sorted_starts, [inf]])
        return padded[i]

    step_end = pd.Series(table["call_end"].to_numpy(float), index=table["step"].to_numpy())
    step_end = step_end[~step_end.index.duplicated()]
    until = step_end.reindex(sync_step).to_numpy(float)
    until = np.where(np.isnan(until), sync_end, until)
    return np.asarray(np.maximum(np.minimum(next_after(work_starts), until), sync_end))


def _own_time(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """autoprof's own stretches of each step: before and after the call region."""
    start = table["step_start"].to_numpy(float)
    cpu_end = table["cpu_end"].to_numpy(float)
    call_s, call_e = table["call_start"].to_numpy(float), table["call_end"].to_numpy(float)
    return np.concatenate([start, call_e]), np.concatenate([call_s, cpu_end])


def _step_frame(rank: int, table: pd.DataFrame, totals: np.ndarray) -> pd.DataFrame:
    out = pd.DataFrame({"rank": rank, "step": table["step"].to_numpy(np.int64),
                        "start_us": table["start"].to_numpy(float),
                        "end_us": table["end"].to_numpy(float)})
    out["step_us"] = totals[:, :len(BUCKETS)].sum(axis=1)
    for i, b in enumerate(BUCKETS):
        out[f"{b}_us"] = totals[:, i]
    out["autoprof_us"] = totals[:, _EXCLUDED]
    return out[STEP_COLUMNS]
