"""Per profiler step: how long the CPU side took, and what the GPU did with the work it got.

A step is a `ProfilerStep#N` span on the CPU lane. GPU rows carry the step of the call that
launched them (the events table's `step` column), so a kernel that runs after its step's CPU
span has ended still counts for that step.

| step | cpu_span_us | gpu_work_us | gpu_busy_us | gpu_window_us | gpu_idle_us | kernels |
| --- | --- | --- | --- | --- | --- | --- |
| 2 | 215.4 | 2.75 | 2.75 | 196.6 | 193.8 | 2 |
| 3 | 104.4 | 2.75 | 2.75 | 87.3 | 84.5 | 2 |
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import LAUNCH_NAME, RUNTIME_CATS
from autoprof.analysis.metrics.codes import pair_codes
from autoprof.analysis.metrics.stats import (
    Coverage,
    cpu_work_mask,
    for_rank,
    gpu_work,
    isin_mask,
    name_matches,
    require_columns,
    step_rows,
)
from autoprof.analysis.metrics.step_work import work_totals

STEP_COLUMNS = [
    "rank",
    "step",
    "start_us",
    "end_us",
    "cpu_span_us",
    "self_cpu_us",
    "gpu_work_us",
    "gpu_busy_us",
    "gpu_window_us",
    "gpu_idle_us",
    "kernels",
    "launches",
]
_NEEDS = ["name", "cat", "lane", "is_gpu_work", "ts_us", "dur_us", "end_us", "self_us",
          "step", "rank", "launch_row"]


def launch_mask(events: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the runtime/driver rows that launch GPU work."""
    runtime = isin_mask(events["cat"], RUNTIME_CATS)
    return np.asarray(runtime & name_matches(events["name"], LAUNCH_NAME))


def _per_key(events: pd.DataFrame, mask: np.ndarray, values: str | None
             ) -> dict[tuple[int, int], float]:
    """Per (rank, step) of the rows in `mask`: the sum of `values`, or the row count (None),
    as a dict (one lookup per step).

    Plain arrays grouped by one code per pair, without copying the (mostly CPU) rows into a
    new frame; the sums are pandas' own, so they equal a groupby on the filtered frame to
    the last bit."""
    keys, group = pair_codes(events["rank"].to_numpy()[mask], events["step"].to_numpy()[mask])
    if values is None:
        totals = np.bincount(group, minlength=len(keys))
    else:
        totals = pd.Series(events[values].to_numpy()[mask]).groupby(group).sum().to_numpy()
    return dict(zip(zip(keys[:, 0].tolist(), keys[:, 1].tolist(), strict=True),
                    totals.tolist(), strict=True))


def _distinct(ranks: np.ndarray) -> list[int]:
    """The distinct values of ``ranks``, ascending (one rank: no hash of every row)."""
    if len(ranks) and ranks.min() == ranks.max():
        return [int(ranks[0])]
    return [int(r) for r in np.unique(ranks).tolist()]


def gpu_known_from(work: pd.DataFrame) -> dict[int, float]:
    """Per rank: the time from which the GPU lane is fully known.

    -inf normally; the start of the earliest GPU work when that work has no launch in the
    trace (it was queued before the profiler started, behind other unrecorded work).
    """
    out: dict[int, float] = {}
    rank, ts = work["rank"].to_numpy(), work["ts_us"].to_numpy(dtype=float)
    launch = work["launch_row"].to_numpy()
    for r in _distinct(rank):  # each rank's earliest item (the first of equals)
        rows = np.flatnonzero(rank == r)
        first = rows[np.nanargmin(ts[rows])]
        out[int(r)] = float(ts[first]) if int(launch[first]) < 0 else -math.inf
    return out


def per_step(events: pd.DataFrame, rank: int | None = None) -> pd.DataFrame:
    """One row per (rank, profiler step), sorted by rank then start.

    - `cpu_span_us`: duration of the `ProfilerStep#N` span; `self_cpu_us`: self time of every
      CPU row inside it (the profiler's own span excluded).
    - `gpu_work_us`: summed durations of kernels / memcpys / memsets launched in the step;
      `gpu_busy_us`: the union of their intervals (overlaps between streams merged).
    - `gpu_window_us`: from the step's start to the end of its last GPU work;
      `gpu_idle_us` = window minus the time any GPU work of the rank (an earlier step's
      included) covers inside it (0 when the step launched nothing). When the earliest GPU
      work of the trace was launched before tracing began (its launch is not in the trace),
      the GPU was busy with unseen work before it, so idle time is only counted from there.
    - `kernels`: GPU work items launched in the step; `launches`: launch calls on the CPU.

    Empty (with these columns) when the trace has no `ProfilerStep#N` spans.
    """
    require_columns(events, _NEEDS, "per_step")
    events = events[_NEEDS]  # only what is used: filtering copies fewer columns
    events = for_rank(events, rank)
    steps = step_rows(events)
    if steps.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in STEP_COLUMNS}).astype(
            {"rank": "int64", "step": "int64", "kernels": "int64", "launches": "int64"}
        )
    self_cpu = _per_key(events, cpu_work_mask(events), "self_us")
    work = gpu_work(events)
    groups = work_totals(work)
    work_rank = work["rank"].to_numpy()
    coverage = {int(r): Coverage(work["ts_us"].to_numpy()[work_rank == r],
                                 work["end_us"].to_numpy()[work_rank == r])
                for r in _distinct(work_rank)}
    known_from = gpu_known_from(work)
    launches = _per_key(events, launch_mask(events), None)

    rows = []
    for step in steps.itertuples(index=False):
        key = (int(step.rank), int(step.step_no))
        start, end = float(step.ts_us), float(step.end_us)
        g = groups.get(key)
        if g is None:
            gpu_work_us = busy = window = idle = 0.0
            kernels = 0
        else:
            gpu_work_us, busy, last_end, kernels = g
            window = max(last_end - start, 0.0)
            # busy with any work of the rank, earlier steps' included
            lo = max(start, known_from.get(key[0], -math.inf))
            idle = max(last_end - lo - coverage[key[0]].covered(lo, last_end), 0.0)
        rows.append({
            "rank": key[0],
            "step": key[1],
            "start_us": start,
            "end_us": end,
            "cpu_span_us": end - start,
            "self_cpu_us": float(self_cpu.get(key, 0.0)),
            "gpu_work_us": gpu_work_us,
            "gpu_busy_us": busy,
            "gpu_window_us": window,
            "gpu_idle_us": idle,
            "kernels": kernels,
            "launches": int(launches.get(key, 0)),
        })
    return pd.DataFrame(rows, columns=STEP_COLUMNS)
