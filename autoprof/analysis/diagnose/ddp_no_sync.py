"""`ddp_accumulation`: DDP gradient accumulation that all-reduces after every micro-step,
offered as `no_sync()` on all but the last.

A step that runs the DDP model's forward and backward several times (gradient accumulation)
needs the gradients summed across ranks once, after the last backward. Without
`model.no_sync()` DDP's reducer all-reduces every bucket after each backward: the
communication, and the ranks waiting for each other, repeat once per micro-step.

- evidence, on the first rank's rows: a profiled step holding at least two outermost
  `DistributedDataParallel.forward` regions (the micro-steps; each runs from its forward to
  the next forward, the last to the step's end) with an outermost collective op
  (`c10d::allreduce_`, ALLREDUCE_OPS) in every micro-step; with no_sync on all but the last,
  only the last one all-reduces and nothing is said. The all-reduces of the micro-steps
  before the last, with the NCCL kernels they launched, must hold at least MIN_PCT of the
  step (host or GPU, the larger);
- fix: `ddp-no-sync`: `with model.no_sync():` around the forward and backward of every
  micro-step but the last;
- gain: those all-reduces' host spans removed with the calls made in them and their GPU
  work (`RemoveSpans`, on the first rank's replay); the last micro-step's all-reduces, now
  of the summed gradients, keep their time. What the other ranks gain is not replayed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.span_fixes import opportunity, outermost, replayed, step_host
from autoprof.analysis.metrics.replay.changes import Change
from autoprof.analysis.metrics.stats import for_rank, isin_mask, ranks_of

FORWARD = "DistributedDataParallel.forward"
ALLREDUCE_OPS = ("c10d::allreduce_", "nccl:all_reduce", "record_param_comms")
MIN_PCT = 5.0  # of the step: what the repeated all-reduces cost


def _micro_steps(forwards: pd.DataFrame, step_end: float) -> list[tuple[float, float]]:
    starts = sorted(float(t) for t in forwards["ts_us"])
    return list(zip(starts, [*starts[1:], step_end], strict=True))


def _repeated(host: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame | None:
    """The all-reduces of each step's micro-steps before its last, or None where a step has
    fewer than two micro-steps or one of them does not all-reduce (no_sync used)."""
    forwards = outermost(host[(host["name"] == FORWARD).to_numpy()])
    reduces = outermost(host[isin_mask(host["name"], ALLREDUCE_OPS)])
    keep: list[pd.DataFrame] = []
    for number, step in steps.iterrows():
        fw = forwards[forwards["step"] == number]
        if len(fw) < 2:
            return None
        mine = reduces[reduces["step"] == number]
        ts = mine["ts_us"].to_numpy(float)
        spans = _micro_steps(fw, float(step["ts_us"]) + float(step["dur_us"]))
        inside = [(ts >= a) & (ts < b) for a, b in spans]
        if not all(m.any() for m in inside):
            return None
        keep.append(mine[np.logical_or.reduce(inside[:-1])])
    return pd.concat(keep) if keep else None


def ddp_accumulation(events: pd.DataFrame, n_steps: int, step_us: float,
                     baseline: Sequence[Change] = ()) -> dict[str, Any] | None:
    """The `ddp_accumulation` opportunity with its prediction, or None (the module doc's
    evidence absent or under MIN_PCT)."""
    if not n_steps or not step_us > 0 or not len(events):
        return None
    if not isin_mask(events["name"], (FORWARD,)).any():
        return None  # no DDP forward anywhere: no rank's rows need be copied
    ranks = ranks_of(events)
    mine = for_rank(events, ranks[0]) if ranks else events
    host = step_host(mine)
    if not (host["name"] == FORWARD).any():
        return None
    top = host[host["name"].astype(str).str.startswith("ProfilerStep#")]
    steps = top.groupby("step").first()
    rows = _repeated(host, steps)
    if rows is None or rows.empty:
        return None
    n = int(steps.shape[0])
    host_us = float(rows["dur_us"].sum()) / n
    gpu = mine[mine["is_gpu_work"].to_numpy(dtype=bool)]
    starts, ends = rows["ts_us"].to_numpy(float), (rows["ts_us"] + rows["dur_us"]).to_numpy(float)
    calls = mine.loc[gpu["launch_row"][gpu["launch_row"].isin(mine.index)].to_numpy()]
    launched = ((calls["ts_us"].to_numpy(float)[:, None] >= starts) &
                (calls["ts_us"].to_numpy(float)[:, None] <= ends)).any(axis=1)
    kernel_rows = gpu[gpu["launch_row"].isin(calls.index[launched])]
    gpu_us = float(kernel_rows["dur_us"].sum()) / n
    us = max(host_us, gpu_us)
    if 100.0 * us / step_us < MIN_PCT:
        return None
    micro = int((host["name"] == FORWARD).sum()) / n
    hint = (f"DDP all-reduces the gradients after each of the {micro:g} backward passes of a "
            f"step (gradient accumulation; {len(rows) / n:g} all-reduces a step before the "
            f"last micro-step, {us:.0f} us): only the last sum is needed. Run every "
            "micro-step but the last under `with model.no_sync():` (the gradients accumulate "
            "locally, and the last backward all-reduces them once)")
    opp = opportunity("ddp_accumulation", "ddp-no-sync", us, step_us,
                      [{"name": FORWARD, "us_per_step": us}], hint,
                      {"micro_steps": micro, "repeated_allreduces_per_step": len(rows) / n,
                       "allreduce_host_us_per_step": host_us,
                       "allreduce_gpu_us_per_step": gpu_us})
    got = replayed(events, rows, baseline)
    return {**opp, **got} if got is not None else None
