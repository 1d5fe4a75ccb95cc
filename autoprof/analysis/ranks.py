"""Several ranks side by side, and which one holds the others up.

Time in collectives is the union of collective intervals inside a step: on the CPU lane the
outermost collective ops (`c10d::*`, `nccl:*`, `gloo:*`, `record_param_comms`,
`ProcessGroup*`), on the GPU lane NCCL kernels launched in the step; a step's collective time
is the larger of the two (gloo waits on the CPU, NCCL kernels wait on the GPU). A step's
compute time is its CPU span minus that collective time.

| rank | step_time_us_median | collective_us_median | compute_us_median |
| --- | --- | --- | --- |
| 0 | 52000 | 50500 | 1500 |
| 1 | 52000 | 400 | 51600 |   <- straggler: the others wait for it in collectives
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis._stats import (
    for_rank,
    median,
    ranks_of,
    require_columns,
    step_rows,
    union_length,
)
from autoprof.analysis.overhead import Overhead, overhead

COLLECTIVE_NAME = re.compile(
    r"^(?:ncclKernel|ncclDevKernel|nccl:|gloo:|c10d::|record_param_comms|ProcessGroup)"
)
# The straggler's compute must exceed the median compute of the other ranks by this share of
# the median step time, and the others must spend at least half of that excess waiting in
# collectives (more than the straggler does). Below that, ranks are considered balanced.
STRAGGLER_MIN_EXCESS = 0.10
STRAGGLER_MIN_WAIT_SHARE = 0.5

RANK_COLUMNS = [
    "rank", "steps", "step_time_us_median", "collective_us_median", "compute_us_median",
    "collective_us_total", "gpu_busy_pct", "self_cpu_us", "self_gpu_us",
]
_NEEDS = ["name", "cat", "lane", "is_gpu_work", "ts_us", "end_us", "dur_us", "step", "rank",
          "parent"]


def _collective_rows(events: pd.DataFrame) -> pd.DataFrame:
    hit = events["name"].str.contains(COLLECTIVE_NAME).to_numpy(dtype=bool)
    rows = events[hit]
    cpu = rows[rows["lane"].to_numpy() == "cpu"]
    # outermost only: a collective op whose parent is also a collective is inside it
    nested = cpu["parent"].isin(cpu.index).to_numpy()
    gpu = rows[rows["is_gpu_work"].to_numpy(dtype=bool)]
    return pd.concat([cpu[~nested], gpu])


def _step_table(events: pd.DataFrame) -> pd.DataFrame:
    """Per step of one rank: span, collective time, compute time."""
    steps = step_rows(events)
    coll = _collective_rows(events)
    if steps.empty:  # the whole trace as one step
        cpu = events[events["lane"].to_numpy() == "cpu"]
        if cpu.empty:
            return pd.DataFrame(columns=["span_us", "collective_us", "compute_us"])
        spans = [(-1, float(cpu["ts_us"].min()), float(cpu["end_us"].max()))]
    else:
        spans = [(int(s.step_no), float(s.ts_us), float(s.end_us))
                 for s in steps.itertuples(index=False)]
    rows = []
    for step, start, end in spans:
        in_step = coll if step == -1 else coll[coll["step"].to_numpy() == step]
        cpu_c = in_step[in_step["lane"].to_numpy() == "cpu"]
        gpu_c = in_step[in_step["lane"].to_numpy() != "cpu"]
        cpu_us = union_length(cpu_c["ts_us"].to_numpy(), cpu_c["end_us"].to_numpy(), start, end)
        gpu_us = union_length(gpu_c["ts_us"].to_numpy(), gpu_c["end_us"].to_numpy())
        span = end - start
        collective = min(max(cpu_us, gpu_us), span)
        rows.append({"span_us": span, "collective_us": collective,
                     "compute_us": span - collective})
    return pd.DataFrame(rows)


def rank_row(events: pd.DataFrame, rank: int, ov: Overhead) -> dict[str, Any]:
    """The rank_table row of one rank's events, given their overhead picture."""
    st = _step_table(events)
    return {
        "rank": rank,
        "steps": len(step_rows(events)),
        "step_time_us_median": median(st["span_us"]),
        "collective_us_median": median(st["collective_us"]),
        "compute_us_median": median(st["compute_us"]),
        "collective_us_total": float(st["collective_us"].sum()) if len(st) else 0.0,
        "gpu_busy_pct": ov.gpu_busy_pct if ov.gpu_busy_pct is not None else np.nan,
        "self_cpu_us": ov.self_cpu_us,
        "self_gpu_us": ov.self_gpu_us,
    }


def rank_table(events: pd.DataFrame, overheads: dict[int, Overhead] | None = None
               ) -> pd.DataFrame:
    """One row per rank: median step time, collective and compute time per step, GPU busy.

    `overheads` may hold already computed `overhead(events, rank)` results, to reuse them.
    """
    require_columns(events, _NEEDS, "rank_table")
    ranks = ranks_of(events)
    rows = []
    for r in ranks:
        ev = events if len(ranks) == 1 else for_rank(events, r)
        ov = (overheads or {}).get(r) or overhead(ev)
        rows.append(rank_row(ev, r, ov))
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def straggler_from(table: pd.DataFrame) -> int | None:
    """The straggler in a rank_table, or None (one rank, or ranks balanced; see module doc)."""
    if len(table) < 2 or table["compute_us_median"].isna().all():
        return None
    slow = table.loc[table["compute_us_median"].idxmax()]
    others = table[table["rank"] != slow["rank"]]
    excess = float(slow["compute_us_median"] - others["compute_us_median"].median())
    step_us = float(table["step_time_us_median"].median())
    if not step_us > 0 or excess < STRAGGLER_MIN_EXCESS * step_us:
        return None
    others_wait = float(others["collective_us_median"].median() - slow["collective_us_median"])
    if others_wait < STRAGGLER_MIN_WAIT_SHARE * excess:
        return None
    return int(slow["rank"])


def straggler_rank(events: pd.DataFrame) -> int | None:
    """The rank whose compute per step is longest while the others wait in collectives."""
    return straggler_from(rank_table(events))
