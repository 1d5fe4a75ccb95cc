"""Several ranks side by side, and which one holds the others up.

A collective (all-reduce, broadcast, ...) ends on every rank when the last rank arrives, so
the rank that arrives last is the one the others wait for. Per step and rank:

- `compute_us`: from the step's start to the start of its first collective (the whole step
  when it has none): the work done before the rank can join the others;
- `collective_us`: the union of collective intervals in the step: on the CPU lane the
  outermost collective ops (`c10d::*`, `nccl:*`, `gloo:*`, `record_param_comms`,
  `ProcessGroup*`, including gloo's worker threads), on the GPU lane NCCL kernels launched in
  the step; the larger of the two (gloo waits on the CPU, NCCL kernels wait on the GPU).

| rank | step_time_us_median | compute_us_median | collective_us_median |
| --- | --- | --- | --- |
| 0 | 9900 | 1010 | 5500 |
| 1 | 9900 | 6010 | 500 |   <- straggler: arrives 5 ms after rank 0, which waits

Which rank is the straggler depends on where the waiting shows:

- NCCL (collective kernels on the GPU): a host enqueues its collectives early and may block
  later (DDP's forward synchronises), so host-side compute does not separate the ranks. The
  waiting shows on the GPU instead: a fast rank's collective kernels run with no compute
  beside them (`exposed_comm_pct`: the breakdown's exposed communication, its
  `gpu_communication` and `host_communication` shares of the step).
  The straggler is the rank with the least exposed communication, when the most exposed
  rank's share exceeds it by at least STRAGGLER_MIN_EXCESS (10 points of the step).
- gloo and other host-side collectives: the straggler is the rank with the longest median
  compute, when every rank has collectives and its compute exceeds the median of the other
  ranks' by at least STRAGGLER_MIN_EXCESS (10%) of the median step time.

Below those margins the ranks are considered balanced. The same key orders every list of
ranks (`rank_order`: the rank the others wait for first), so a straggler heads the list of
slowest ranks; ranks that do not all meet in collectives are ordered by median step time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.overhead import COLLECTIVE_NAME, Overhead, overhead
from autoprof.analysis.metrics.overhead import NEEDS as OVERHEAD_NEEDS
from autoprof.analysis.metrics.stats import (
    by_rank,
    cpu_mask,
    median,
    name_matches,
    require_columns,
    step_rows,
    union_length,
)
from autoprof.analysis.metrics.verdict import classify_breakdown

if TYPE_CHECKING:
    from autoprof.analysis.metrics.breakdown import Breakdown

# The straggler's compute must exceed the median compute of the other ranks by this share of
# the median step time. Below that, ranks are considered balanced.
STRAGGLER_MIN_EXCESS = 0.10

RANK_COLUMNS = [
    "rank", "steps", "step_time_us_median", "compute_us_median", "collective_us_median",
    "collective_us_total", "collectives", "gpu_collectives", "exposed_comm_pct", "gpu_busy_pct",
    "verdict", "self_cpu_us", "self_gpu_us",
]
# its own columns, plus what overhead() needs for the GPU busy column
_NEEDS = list(dict.fromkeys(["name", "cat", "lane", "is_gpu_work", "ts_us", "end_us", "dur_us",
                             "step", "rank", "parent", *OVERHEAD_NEEDS]))


def _collective_rows(events: pd.DataFrame) -> pd.DataFrame:
    rows = events[name_matches(events["name"], COLLECTIVE_NAME)]
    cpu = rows[rows["lane"].eq("cpu").to_numpy(dtype=bool)]
    # outermost only: a collective op whose parent is also a collective is inside it
    nested = cpu["parent"].isin(cpu.index).to_numpy()
    gpu = rows[rows["is_gpu_work"].to_numpy(dtype=bool)]
    return pd.concat([cpu[~nested], gpu])


def _step_table(events: pd.DataFrame) -> pd.DataFrame:
    """Per step of one rank: span, collective time, compute time."""
    steps = step_rows(events)
    coll = _collective_rows(events)
    if steps.empty:  # the whole trace as one step
        cpu = cpu_mask(events)  # a mask: filtering would copy nearly every row
        if not cpu.any():
            return pd.DataFrame(columns=["span_us", "collective_us", "compute_us", "collectives",
                                         "gpu_collectives"])
        spans = [(-1, float(pd.Series(events["ts_us"].to_numpy()[cpu]).min()),
                  float(pd.Series(events["end_us"].to_numpy()[cpu]).max()))]
    else:
        spans = [(int(s.step_no), float(s.ts_us), float(s.end_us))
                 for s in steps.itertuples(index=False)]
    # (step, on cpu, start, end) of every collective, as plain arrays grouped by step
    c_step = coll["step"].to_numpy()
    c_cpu = coll["lane"].eq("cpu").to_numpy(dtype=bool)
    c_ts, c_end = coll["ts_us"].to_numpy(float), coll["end_us"].to_numpy(float)
    by_step: dict[int, np.ndarray] = {}
    if len(coll):
        order = np.argsort(c_step, kind="stable")
        cut = np.flatnonzero(np.diff(c_step[order]) != 0) + 1
        for idx in np.split(order, cut):
            by_step[int(c_step[idx[0]])] = idx
    everything = np.arange(len(coll))
    rows = []
    for step, start, end in spans:
        idx = everything if step == -1 else by_step.get(step, everything[:0])
        on_cpu = idx[c_cpu[idx]]
        on_gpu = idx[~c_cpu[idx]]
        # a step without collectives (most steps of most runs) unions nothing
        cpu_us = union_length(c_ts[on_cpu], c_end[on_cpu], start, end) if len(on_cpu) else 0.0
        gpu_us = union_length(c_ts[on_gpu], c_end[on_gpu]) if len(on_gpu) else 0.0
        span = end - start
        first_of = on_cpu if len(on_cpu) else idx
        first = float(c_ts[first_of].min()) if len(first_of) else end
        rows.append({"span_us": span, "collective_us": min(max(cpu_us, gpu_us), span),
                     "compute_us": min(max(first - start, 0.0), span),
                     "collectives": len(idx), "gpu_collectives": len(on_gpu)})
    return pd.DataFrame(rows)


def exposed_comm_pct(buckets_pct: dict[str, float | None]) -> float:
    """The step's share of communication nothing hides: NCCL kernels alone on the GPU plus
    host collectives (gloo) with the GPU idle (kinds.COMMUNICATION_BUCKETS)."""
    from autoprof.analysis.kinds import COMMUNICATION_BUCKETS

    return float(sum(float(buckets_pct.get(b) or 0.0) for b in COMMUNICATION_BUCKETS))


def rank_row(events: pd.DataFrame, rank: int, ov: Overhead,
             bd: Breakdown | None = None) -> dict[str, Any]:
    """The rank_table row of one rank's events, given their overhead picture and breakdown
    (the verdict follows the breakdown: metrics/verdict.py)."""
    if bd is None:
        from autoprof.analysis.metrics.breakdown import breakdown

        bd = breakdown(events)
    mean = bd.for_rank(rank).mean()
    pct = mean["buckets_pct"]
    st = _step_table(events)
    return {
        "rank": rank,
        "steps": len(step_rows(events)),
        "step_time_us_median": median(st["span_us"]),
        "collective_us_median": median(st["collective_us"]),
        "compute_us_median": median(st["compute_us"]),
        "collective_us_total": float(st["collective_us"].sum()) if len(st) else 0.0,
        "collectives": int(st["collectives"].sum()) if len(st) else 0,
        "gpu_collectives": int(st["gpu_collectives"].sum()) if len(st) else 0,
        "exposed_comm_pct": exposed_comm_pct(pct),  # type: ignore[arg-type]
        "gpu_busy_pct": ov.gpu_busy_pct if ov.gpu_busy_pct is not None else np.nan,
        "verdict": classify_breakdown(mean, ov.has_gpu),
        "self_cpu_us": ov.self_cpu_us,
        "self_gpu_us": ov.self_gpu_us,
    }


def rank_table(events: pd.DataFrame, overheads: dict[int, Overhead] | None = None,
               bd: Breakdown | None = None) -> pd.DataFrame:
    """One row per rank: median step time, collective and compute time per step, GPU busy.

    `overheads` may hold already computed `overhead(events, rank)` results and `bd` the
    run's breakdown, to reuse them.
    """
    require_columns(events, _NEEDS, "rank_table")
    events = events[_NEEDS]  # only what is used: filtering copies fewer columns
    rows = []
    for r, ev in by_rank(events):  # one pass: the table is sorted by rank
        ov = (overheads or {}).get(r) or overhead(ev)
        rows.append(rank_row(ev, r, ov, bd))
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


OrderBy = Literal["exposed_comm_pct", "compute_us_median", "step_time_us_median"]
ORDER_TEXT: dict[str, str] = {
    "exposed_comm_pct": "least exposed communication first (NCCL: the others wait for it)",
    "compute_us_median": "longest compute before the first collective first (host "
                         "collectives: it arrives last)",
    "step_time_us_median": "longest median step first (the ranks never all meet in "
                           "collectives)",
}


def order_by(table: pd.DataFrame) -> OrderBy:
    """Which column tells how late each rank of a rank_table arrives (see the module doc):
    the straggler rule's, so that one ordering serves the straggler and every list of ranks."""
    if (table["collectives"] == 0).any():  # ranks that never meet cannot wait for each other
        return "step_time_us_median"
    if (table["gpu_collectives"] > 0).all():  # NCCL: the waiting shows on the GPU
        return "exposed_comm_pct"
    return "compute_us_median"


def rank_order(table: pd.DataFrame) -> list[int]:
    """The ranks of a rank_table, the one the others wait for first (``order_by``), ties by
    the longer median step, then the lower rank. The straggler, when there is one, is the
    first."""
    if not len(table):
        return []
    key = table[order_by(table)].astype(float)
    late = -key if order_by(table) == "exposed_comm_pct" else key
    frame = pd.DataFrame({"late": late.fillna(-np.inf).to_numpy(),
                          "step": table["step_time_us_median"].astype(float)
                          .fillna(-np.inf).to_numpy(),
                          "rank": table["rank"].astype(int).to_numpy()})
    ordered = frame.sort_values(["late", "step", "rank"], ascending=[False, False, True],
                                kind="stable")
    return [int(r) for r in ordered["rank"]]


def straggler_from(table: pd.DataFrame) -> int | None:
    """The straggler in a rank_table, or None (one rank, or ranks balanced; see module doc):
    the first of ``rank_order`` when it is late by the margin."""
    if len(table) < 2 or table["compute_us_median"].isna().all():
        return None
    by = order_by(table)
    if by == "step_time_us_median":
        return None
    first = rank_order(table)[0]
    me = table[table["rank"] == first].iloc[0]
    if by == "exposed_comm_pct":
        exposed = table["exposed_comm_pct"].astype(float)
        if float(exposed.max() - exposed.min()) < STRAGGLER_MIN_EXCESS * 100.0:
            return None
        return first
    others = table[table["rank"] != first]
    excess = float(me["compute_us_median"] - others["compute_us_median"].median())
    step_us = float(table["step_time_us_median"].median())
    if not step_us > 0 or excess < STRAGGLER_MIN_EXCESS * step_us:
        return None
    return first


def straggler_rank(events: pd.DataFrame) -> int | None:
    """The rank the others wait for in collectives (see the module doc), or None."""
    return straggler_from(rank_table(events))
