"""`host_tensors`: small tensors made on the host each step and copied to the device, offered
as made on the device (or once, before the loop).

`torch.arange(n).cuda()`, `torch.tensor([...]).to(device)`, `torch.zeros(k).to(x.device)`
in a step build the tensor on the CPU, then copy it: a `cudaMemcpyAsync` from pageable
memory, which for a small copy the host waits for (`cudaStreamSynchronize` under the copy),
every step. Made on the device (`torch.arange(n, device=x.device)`) the copy and its wait go;
made once before the loop (a constant) the creation goes too.

- evidence: host-to-device copies (`Memcpy HtoD`) of at most MAX_BYTES launched inside the
  profiled steps, under a copy op (COPY_OPS: `x.to(device)`, `.cuda()`) whose operand the
  op just before it on the same parent made on the host (MAKERS: `aten::arange`,
  `aten::lift_fresh` for `torch.tensor(...)`, which records `aten::detach_` after it,
  `aten::scalar_tensor`, `aten::full`, ...);
  the copy ops' host time must be at least MIN_PCT of the step;
- fix: `tensor-on-device`: create on the device, or hoist the constant out of the loop;
- gain: the copy ops' spans removed (their calls, their waits and the copies:
  `RemoveSpans`); the creation stays (on the device it costs a launch about what the host's
  fill costs): the estimate is for the device-made tensor, hoisting gains a little more.
  On the H100 catalogue's `torch.arange(2048).cuda()` before an embedding, creating it on the
  device was timed 0.86x without the profiler (slower: a launch and a kernel where the host's
  arange and a 16 KiB copy were cheap), which this entry does not model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.span_fixes import opportunity, replayed, step_host
from autoprof.analysis.metrics.replay.changes import Change
from autoprof.analysis.metrics.stats import factorized

HTOD = "Memcpy HtoD"
MAX_BYTES = 65536  # a small tensor's copy: its cost is the call and the wait, not the link
COPY_OPS = ("aten::to", "aten::_to_copy", "aten::copy_")
MAKERS = ("aten::tensor", "aten::lift_fresh", "aten::scalar_tensor", "aten::arange",
          "aten::full", "aten::zeros", "aten::ones", "aten::linspace", "aten::eye",
          "aten::rand", "aten::randn", "aten::randint", "aten::randperm")
# what `torch.tensor(data)` records after its `aten::lift_fresh` (the new tensor detached)
PASS_THROUGH = ("aten::detach_", "aten::detach")
MIN_PCT = 5.0  # of the step: the copies' host time
_MAX_DEPTH = 32


def _copy_op(events: pd.DataFrame, row: int) -> int | None:
    """The outermost COPY_OPS row above launch call `row`, or None."""
    names, parents = events["name"], events["parent"]
    best, at, depth = None, row, 0
    while at >= 0 and at in events.index and depth < _MAX_DEPTH:
        if str(names.at[at]) in COPY_OPS:
            best = at
        parent = parents.at[at]
        at, depth = (int(parent) if pd.notna(parent) else -1), depth + 1
    return best


def _maker_before(host: pd.DataFrame, row: int) -> str | None:
    """The name of the `aten::` op just before host row `row` under the same parent (past
    PASS_THROUGH ops), where it is one of MAKERS, else None."""
    parent, ts = host.at[row, "parent"], float(host.at[row, "ts_us"])
    same = host[(host["parent"] == parent).to_numpy() & (host["ts_us"] < ts).to_numpy()]
    names = same.sort_values("ts_us", ascending=False)["name"].astype(str)
    for name in names[names.str.startswith("aten::")]:
        if name not in PASS_THROUGH:
            return name if name in MAKERS else None
    return None


def host_tensors(events: pd.DataFrame, n_steps: int, step_us: float,
                 baseline: Sequence[Change] = ()) -> dict[str, Any] | None:
    """The `host_tensors` opportunity with its prediction, or None (the module doc's evidence
    absent or under MIN_PCT)."""
    # masks first: only the copies' rows are taken, not every GPU row of the steps
    codes, uniques = factorized(events["name"])
    htod = np.fromiter((str(u).startswith(HTOD) for u in uniques), bool, len(uniques))
    copies = events[events["is_gpu_work"].to_numpy(dtype=bool)
                    & (events["step"] >= 0).to_numpy() & htod[codes]]
    if "bytes" in copies.columns:
        copies = copies[copies["bytes"].fillna(0).to_numpy() <= MAX_BYTES]
    if copies.empty or not n_steps or not step_us > 0:
        return None
    host = step_host(events)
    launches = [int(r) for r in copies["launch_row"].to_numpy() if r >= 0 and r in events.index]
    ops = {op for op in (_copy_op(events, r) for r in launches)
           if op is not None and op in host.index}
    # only the copy ops' siblings are searched for their makers
    siblings = host[host["parent"].isin(host.loc[sorted(ops), "parent"]).to_numpy()]
    found: dict[int, str] = {}
    for op in sorted(ops):
        maker = _maker_before(siblings, op)
        if maker is not None:
            found[op] = maker
    if not found:
        return None
    rows = host.loc[list(found)]
    us = float(rows["dur_us"].sum()) / n_steps
    if 100.0 * us / step_us < MIN_PCT:
        return None
    makers = pd.Series(rows["dur_us"].to_numpy(), index=[found[r] for r in rows.index])
    top = makers.groupby(level=0).sum().sort_values(ascending=False)
    named = ", ".join(str(n) for n in top.index[:3])
    hint = (f"{len(rows) / n_steps:g} small tensors a step are made on the host ({named}) and "
            f"then copied to the device, the host waiting for each copy ({us:.0f} us a step): "
            "make them on the device (torch.arange(n, device=x.device), torch.full(shape, v, "
            "device=x.device), torch.zeros(..., device=...)), or once before the loop where "
            "they do not change; torch.tensor(data, device=...) still copies from the host, "
            "and a Python number in arithmetic needs no tensor")
    opp = opportunity("host_tensors", "tensor-on-device", us, step_us,
                      [{"name": str(n), "us_per_step": float(v) / n_steps}
                       for n, v in top.head(3).items()], hint,
                      {"copies_per_step": len(rows) / n_steps, "copy_host_us_per_step": us,
                       "makers": [str(n) for n in top.index]})
    got = replayed(events, rows, baseline)
    return {**opp, **got} if got is not None else None
