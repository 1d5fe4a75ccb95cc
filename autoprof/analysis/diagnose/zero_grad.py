"""`zeroed_grads`: `optimizer.zero_grad(set_to_none=False)`, offered as set_to_none=True.

Zeroing keeps every gradient allocated and fills it with zeros each step: one `aten::zero_`
(a `fill_` kernel) per parameter under the optimizer's `Optimizer.zero_grad#...` region (one
`aten::_foreach_zero_` per device and dtype with `foreach=True`), and backward then adds
each new gradient into its zeroed buffer (an `aten::add_` under `AccumulateGrad`). With
`set_to_none=True` (`zero_grad()`'s default since torch 2.0) both go: the gradients are
dropped, and backward's first accumulation takes the new gradient as it is.

- evidence: zeroing ops (ZERO_OPS) inside the profiled steps' `Optimizer.zero_grad#` regions;
  with them, the `aten::add_` directly under `AccumulateGrad` nodes of the step's first
  backward pass (a step that calls backward several times keeps the later micro-steps'
  adds): no more a step than the gradients zeroed where each is zeroed by its own
  `aten::zero_`; with one `aten::_foreach_zero_` over them all (`foreach=True`, and the
  default of a `fused=True` optimizer), whose list the trace does not size, the adds before
  the first forward op after them (a host op with an autograd sequence number outside
  backward's `evaluate_function` nodes: the next micro-step's forward); the host time of
  the zeroing and the adds must be at least MIN_PCT of the step;
- fix: `zero-grad-none`: `optimizer.zero_grad()` (or `set_to_none=True`);
- gain: those ops' spans removed, host, launches and kernels (`RemoveSpans`), the region's
  Python loop over the parameters kept (set_to_none walks them too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.span_fixes import opportunity, outermost, replayed, step_host
from autoprof.analysis.metrics.replay.changes import Change
from autoprof.analysis.metrics.stats import isin_mask, name_matches

REGION = re.compile(r"^Optimizer\.zero_grad#")
ZERO_OPS = ("aten::zero_", "aten::_foreach_zero_")
ACCUMULATE = "AccumulateGrad"  # torch::autograd::AccumulateGrad
BACKWARD_NODE = "autograd::engine::evaluate_function"
ADD = "aten::add_"
MIN_PCT = 5.0  # of the step's host time the deleted ops must hold


def _inside(rows: pd.DataFrame, spans: pd.DataFrame) -> np.ndarray:
    """Mask of `rows` starting inside one of `spans` (host rows) on its thread."""
    out = np.zeros(len(rows), bool)
    ts = rows["ts_us"].to_numpy(float)
    tid = rows["tid"].to_numpy() if "tid" in rows.columns else None
    for _, s in spans.iterrows():
        hit = (ts >= float(s["ts_us"])) & (ts <= float(s["ts_us"]) + float(s["dur_us"]))
        if tid is not None:
            hit &= tid == s["tid"]
        out |= hit
    return out


def _accumulate_adds(host: pd.DataFrame, per_step: dict[int, int]) -> pd.DataFrame:
    """The `aten::add_` rows directly under an AccumulateGrad node, the first `per_step[s]`
    of each step `s`."""
    nodes = host[host["name"].astype(str).str.contains(ACCUMULATE, regex=False)]
    adds = host[(host["name"] == ADD).to_numpy() & host["parent"].isin(nodes.index).to_numpy()]
    adds = adds.sort_values("ts_us", kind="stable")
    keep = [g.head(per_step.get(int(s), 0)) for s, g in adds.groupby("step")]
    return pd.concat(keep) if keep else adds.iloc[:0]


def _first_pass_adds(host: pd.DataFrame, adds: pd.DataFrame) -> dict[int, int]:
    """Per step, how many of `adds` (sorted by time) start before the first forward op after
    the step's first add: the accumulations of its first backward pass."""
    nodes = host[host["name"].astype(str).str.startswith(BACKWARD_NODE)]
    seq = host["seq_nr"].to_numpy() if "seq_nr" in host.columns else np.full(len(host), -1)
    graded = host[(seq >= 0)]
    forward = graded[~_inside(graded, nodes)]
    out: dict[int, int] = {}
    for s, g in adds.groupby("step"):
        ts = g["ts_us"].to_numpy(float)
        fw = forward[(forward["step"] == s).to_numpy()]["ts_us"].to_numpy(float)
        later = fw[fw > ts[0]]
        out[int(s)] = int((ts < later.min()).sum()) if len(later) else len(ts)
    return out


def zeroed_grads(events: pd.DataFrame, n_steps: int, step_us: float,
                 baseline: Sequence[Change] = ()) -> dict[str, Any] | None:
    """The `zeroed_grads` opportunity with its prediction, or None (the module doc's evidence
    absent or under MIN_PCT)."""
    if not n_steps or not step_us > 0 or not name_matches(events["name"], REGION).any():
        return None  # no region anywhere: the step's host rows need not be copied
    host = step_host(events)
    regions = host[name_matches(host["name"], REGION)]
    if regions.empty:
        return None
    zeros = host[isin_mask(host["name"], ZERO_OPS)]
    zeros = outermost(zeros[_inside(zeros, regions)])
    if zeros.empty:
        return None
    grads = zeros.groupby("step").size()
    foreach = bool((zeros["name"] == ZERO_OPS[1]).any())
    every = {int(s): 1 << 30 for s in grads.index}
    per_step = (_first_pass_adds(host, _accumulate_adds(host, every)) if foreach
                else {int(k): int(v) for k, v in grads.items()})
    adds = _accumulate_adds(host, per_step)
    rows = pd.concat([zeros, adds]) if len(adds) else zeros
    us = float(rows["dur_us"].sum()) / n_steps
    if 100.0 * us / step_us < MIN_PCT:
        return None
    region = str(regions["name"].mode().iloc[0])
    zero_ops = len(zeros) / n_steps
    hint = (f"the optimizer zeroes the gradients instead of dropping them "
            f"({zero_ops:g} zeroing op{'' if zero_ops == 1 else 's'} a step under {region}, "
            f"and backward adds "
            f"{len(adds) / n_steps:g} gradients into the zeroed buffers: {us:.0f} us a step): "
            "call optimizer.zero_grad() (set_to_none=True, the default since torch 2.0), not "
            "zero_grad(set_to_none=False); backward then writes each gradient instead of "
            "adding into zeros")
    opp = opportunity("zeroed_grads", "zero-grad-none", us, step_us,
                      [{"name": region, "us_per_step": us}], hint,
                      {"zero_ops_per_step": len(zeros) / n_steps,
                       "accumulate_adds_per_step": len(adds) / n_steps,
                       "deleted_host_us_per_step": us})
    got = replayed(events, rows, baseline)
    return {**opp, **got} if got is not None else None
