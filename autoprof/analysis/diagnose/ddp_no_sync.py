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
  before the last and the reducer's work there (below), with the NCCL kernels they
  launched, must hold at least MIN_PCT of the step (host or GPU, the larger);
- fix: `ddp-no-sync`: `with model.no_sync():` around the forward and backward of every
  micro-step but the last;
- gain: in the micro-steps before the last, those all-reduces' host spans removed with the
  calls made in them and their GPU work (`RemoveSpans`, on the first rank's replay), with
  the reducer's work no_sync also skips: DDP's hook after each `AccumulateGrad` (from the
  node's end to its `evaluate_function` row's end, where the row holds the reducer's
  `mul_out` copying the gradient into its bucket) and the copies back
  (`copy_bucket_to_grad`); the last micro-step's all-reduces, now of the summed gradients,
  keep their time. What the other ranks gain is not replayed. On the one-rank NCCL
  development program (`gpu_h100_heldout_deleting`'s `ddp_accumulate`) the all-reduces
  alone held 3% of the step (not offered); with the reducer's work 1.16x against 1.31x
  measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.span_fixes import (
    opportunity,
    outermost,
    replayed,
    spans_of,
    step_host,
)
from autoprof.analysis.metrics.replay.changes import Change
from autoprof.analysis.metrics.stats import for_rank, isin_mask, ranks_of

FORWARD = "DistributedDataParallel.forward"
ALLREDUCE_OPS = ("c10d::allreduce_", "nccl:all_reduce", "record_param_comms")
# the reducer's work around its all-reduce, which no_sync skips: each gradient copied into its
# bucket (over the world size) as backward makes it, each bucket copied back after the sum
REDUCER_OPS = ("torch::distributed::reducer::mul_out",
               "torch.distributed.ddp.reducer::copy_bucket_to_grad")
NODE = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
ACCUMULATE = "torch::autograd::AccumulateGrad"
MIN_PCT = 5.0  # of the step: what the repeated all-reduces cost


def _micro_steps(forwards: pd.DataFrame, step_end: float) -> list[tuple[float, float]]:
    starts = sorted(float(t) for t in forwards["ts_us"])
    return list(zip(starts, [*starts[1:], step_end], strict=True))


def _hook_tails(host: pd.DataFrame) -> pd.DataFrame:
    """DDP's hook after each gradient's accumulation, as rows (`ts_us`, `dur_us`, `step`):
    from an `AccumulateGrad` node's end to the end of its `evaluate_function` row, where that
    row holds a reducer op (REDUCER_OPS: the hook copying the gradient into its bucket)."""
    nodes = host[(host["name"] == NODE).to_numpy()]
    held = host[isin_mask(host["name"], REDUCER_OPS)]["parent"]
    nodes = nodes[nodes.index.isin(held)]
    acc = host[(host["name"] == ACCUMULATE).to_numpy() & host["parent"].isin(nodes.index)]
    acc_end = (acc["ts_us"] + acc["dur_us"]).groupby(acc["parent"]).max()
    nodes = nodes[nodes.index.isin(acc_end.index)]
    start = acc_end.reindex(nodes.index).to_numpy(float)
    end = (nodes["ts_us"] + nodes["dur_us"]).to_numpy(float)
    return pd.DataFrame({"ts_us": start, "dur_us": end - start, "step": nodes["step"]},
                        index=nodes.index)


def _before_last(rows: pd.DataFrame, spans: list[tuple[float, float]]) -> pd.DataFrame:
    """The `rows` starting in one of the micro-steps `spans` but the last."""
    at = rows["ts_us"].to_numpy(float)
    return rows[np.logical_or.reduce([(at >= a) & (at < b) for a, b in spans[:-1]])]


def _repeated(host: pd.DataFrame, steps: pd.DataFrame
              ) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The all-reduces of each step's micro-steps before its last, and the reducer's work
    in those micro-steps (REDUCER_OPS and the hooks' tails, `_hook_tails`); None where a step
    has fewer than two micro-steps or one of them does not all-reduce (no_sync used)."""
    forwards = outermost(host[(host["name"] == FORWARD).to_numpy()])
    reduces = outermost(host[isin_mask(host["name"], ALLREDUCE_OPS)])
    reducer = pd.concat([outermost(host[isin_mask(host["name"], REDUCER_OPS)]),
                         _hook_tails(host)])
    keep: list[pd.DataFrame] = []
    work: list[pd.DataFrame] = []
    for number, step in steps.iterrows():
        fw = forwards[forwards["step"] == number]
        if len(fw) < 2:
            return None
        mine = reduces[reduces["step"] == number]
        ts = mine["ts_us"].to_numpy(float)
        spans = _micro_steps(fw, float(step["ts_us"]) + float(step["dur_us"]))
        if not all(((ts >= a) & (ts < b)).any() for a, b in spans):
            return None
        keep.append(_before_last(mine, spans))
        work.append(_before_last(reducer[(reducer["step"] == number).to_numpy()], spans))
    if not keep:
        return None
    return pd.concat(keep), pd.concat(work)


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
    found = _repeated(host, steps)
    if found is None or found[0].empty:
        return None
    reduces, work = found
    rows = pd.concat([reduces, work])
    n = int(steps.shape[0])
    starts, ends = (np.asarray(v, float) for v in spans_of(rows))
    host_us = float((ends - starts).sum()) / n
    gpu = mine[mine["is_gpu_work"].to_numpy(dtype=bool)]
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
            f"step (gradient accumulation; {len(reduces) / n:g} all-reduces a step before the "
            f"last micro-step, with the reducer's copies into and out of its buckets: "
            f"{us:.0f} us): only the last sum is needed. Run every "
            "micro-step but the last under `with model.no_sync():` (the gradients accumulate "
            "locally, and the last backward all-reduces them once)")
    opp = opportunity("ddp_accumulation", "ddp-no-sync", us, step_us,
                      [{"name": FORWARD, "us_per_step": us}], hint,
                      {"micro_steps": micro, "repeated_allreduces_per_step": len(reduces) / n,
                       "allreduce_host_us_per_step": host_us,
                       "allreduce_gpu_us_per_step": gpu_us})
    got = replayed(events, rows, baseline)
    return {**opp, **got} if got is not None else None
