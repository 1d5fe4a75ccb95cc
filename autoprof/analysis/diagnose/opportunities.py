"""What removing each cause would buy: the non-compute buckets of the breakdown, ranked.

| cause | us_per_step | pct_of_step | max_speedup | where |
| --- | --- | --- | --- | --- |
| host_launch | 120.4 | 83.1 | 5.9 | aten::matmul 84.0, aten::add 35.3 |
| host_untraced | 16.1 | 11.1 | 1.1 | between ops in seed_n64 16.1 |

`max_speedup` = step / (step - bucket): the speed-up if the cause vanished and nothing else
changed (an upper bound: removing host work can expose GPU time it hid). A bucket counts its
time inside the call only (`Breakdown.within_call`), over the whole step: the time between
calls, the caller's loop, is the `between_calls` opportunity's (diagnose/predictions.py), never
offered twice; its holders are named apart (`Breakdown.between_where`). `gpu_compute` is not
an opportunity here (the efficiency analysis says how well that time is used). On a CPU-only
run `host_cpu_work` is the step itself, so its place goes to the heaviest ops, each bounded
on its own (cpu_bounds.py).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from autoprof.analysis.diagnose.cpu_bounds import cpu_op_bounds
from autoprof.analysis.kinds import BUCKETS, COMMUNICATION_BUCKETS
from autoprof.analysis.metrics.breakdown import Breakdown
from autoprof.analysis.metrics.overhead import COLLECTIVE_NAME

TOP_WHERE = 3
MIN_PCT = 0.5  # causes below this share of the step are left out

HINTS: dict[str, str] = {
    "gpu_memory": "copies and memsets occupy the GPU alone: keep data on the device, pin host "
                  "memory and copy with non_blocking=True so copies overlap compute",
    "gpu_communication": "collectives run with no compute beside them: overlap them with the "
                         "backward pass (DDP buckets, gradient_as_bucket_view), or balance the "
                         "ranks if one waits for another",
    "host_communication": "the host waits in collectives (gloo, on the CPU) that nothing "
                          "overlaps: balance the ranks if one waits for another, or "
                          "communicate less often (larger buckets, gradient accumulation)",
    "host_launch": "the host issues GPU work too slowly: fewer, larger ops (batch, fuse, "
                   "torch.compile) or CUDA graphs to replay the launches",
    "host_sync": "the host waits for the GPU and the GPU then waits for the host: avoid "
                 ".item(), .cpu(), printing or branching on device tensors inside the step; "
                 "accumulate on the device and read once",
    "host_cpu_work": "the GPU waits while the host computes: move that work off the step "
                     "(DataLoader workers, pin_memory, precomputation) or onto the GPU",
    "host_untraced": "the GPU waits while the host runs Python between ops, sleeps or waits on "
                     "something untraced: look at the code around the named region "
                     "(with_stack=True shows the lines), or start it earlier / in a worker",
}


# a torch.compile'd run is not told to compile: these replace HINTS / CPU_HINTS there
COMPILED_HINTS: dict[str, str] = {
    "host_launch": "the host issues GPU work too slowly: fewer, larger ops (batch, fuse) or "
                   "CUDA graphs to replay the launches (mode='reduce-overhead' in its "
                   "torch.compile)",
    "host_cpu_work": "time inside ops: the heaviest ops by self time are where to look "
                     "(vectorise, fewer and larger ops)",
}

# on a CPU-only run no GPU waits: the host buckets are the step itself
CPU_HINTS: dict[str, str] = {
    "host_cpu_work": "time inside ops: the heaviest ops by self time are where to look "
                     "(vectorise, fewer and larger ops, torch.compile)",
    "host_untraced": "time between ops (Python, waiting, sleeping): look at the code around "
                     "the named region (with_stack=True shows the lines)",
}


def opportunities(bd: Breakdown, straggler: int | None = None,
                  rank: int | None = None,
                  cpu_ops: pd.DataFrame | None = None,
                  compiled: bool = False) -> list[dict[str, Any]]:
    """The non-compute buckets of `bd` (one rank, or every rank's steps pooled), largest
    first; see the module doc. `straggler`: the rank the others wait for, named in the hint
    of a faster rank's exposed communication. `cpu_ops`: the self time per step of each op
    over `bd`'s steps (metrics/cpu_ops.heavy_ops), which replaces `host_cpu_work` on a
    CPU-only run. `compiled`: the trace shows torch.compile'd code (COMPILED_HINTS)."""
    steps = bd.steps
    n = len(steps)
    if not n:
        return []
    step_us = float(steps["step_us"].mean())
    if not step_us > 0:
        return []
    has_gpu = bool(steps[[f"{b}_us" for b in BUCKETS[:3]]].to_numpy().sum() > 0)
    inside = bd.within_call().steps  # each bucket inside the call
    out = []
    for bucket in BUCKETS[1:]:
        us = float(inside[f"{bucket}_us"].mean())
        pct = 100.0 * us / step_us
        if pct < MIN_PCT:
            continue
        ops = cpu_op_bounds(cpu_ops, step_us, compiled) if bucket == "host_cpu_work" and \
            not has_gpu and cpu_ops is not None else []
        if ops:
            out += ops
            continue
        rows = bd.where[bd.where["bucket"] == bucket]
        per_name = rows.groupby("name", sort=False)["us"].sum().sort_values(
            ascending=False, kind="stable").head(TOP_WHERE)
        hint = HINTS[bucket] if has_gpu else CPU_HINTS.get(bucket, HINTS[bucket])
        if compiled and (has_gpu or bucket in CPU_HINTS):
            hint = COMPILED_HINTS.get(bucket, hint)
        waits = bucket in COMMUNICATION_BUCKETS or any(
            COLLECTIVE_NAME.search(str(name)) for name in per_name.index)
        if waits and straggler is not None and rank is not None and rank != straggler:
            hint = (f"rank {rank} waits here for rank {straggler}, the straggler: this "
                    f"exposed communication is rank {straggler}'s delay; make rank "
                    f"{straggler} faster or give it less work")
        out.append({
            "cause": bucket,
            "us_per_step": us,
            "pct_of_step": pct,
            "max_speedup": step_us / (step_us - us) if step_us - us > 0 else None,
            "where": [{"name": str(name), "us_per_step": float(v) / n}
                      for name, v in per_name.items()],
            "hint": hint,
        })
    return sorted(out, key=lambda o: -o["us_per_step"])


def rank_attribution(bd: Breakdown, table: pd.DataFrame, straggler: int | None
                     ) -> dict[int, dict[str, Any]]:
    """Per rank: its own `breakdown` (mean), `opportunities` and `verdict`. A faster rank's
    exposed communication is named as waiting for the straggler."""
    out: dict[int, dict[str, Any]] = {}
    verdicts = dict(zip(table["rank"].tolist(), table["verdict"].tolist(), strict=True))
    for rank in verdicts:
        own = bd.for_rank(int(rank))
        out[int(rank)] = {"breakdown": own.mean(),
                          "opportunities": opportunities(own, straggler, int(rank)),
                          "verdict": verdicts[rank]}
    return out
