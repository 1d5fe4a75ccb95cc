"""Findings about host time that the GPU-centred checks do not cover.

- `cpu-dispatch-bound` (no GPU work): at least DISPATCH_MIN_OPS outermost ops per step with a
  median shorter than DISPATCH_MEDIAN_US: the step is framework dispatch, not math. Evidence:
  ops per step, the most frequent op, time in ops vs between them, heaviest ops by self time.
- `data-loader`: a DataLoader's `__next__` (and the untraced time inside it) holds at least
  DATA_LOADER_MIN_PCT of the step while the GPU is idle (or, on CPU, of the step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME
from autoprof.analysis.metrics._tree import has_ancestor_in, parent_positions
from autoprof.analysis.metrics.stats import isin_mask
from autoprof.analysis.metrics.sync import autoprof_mask
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

# an op this short is mostly the framework's per-op cost (dispatch, checks, allocation):
# a few microseconds per op even for one element on a fast CPU
DISPATCH_MEDIAN_US = 20.0
DISPATCH_MIN_OPS = 100
DATA_LOADER_MIN_PCT = 10.0
TOP_HEAVIEST = 3


def _outermost_ops(ctx: Analysis) -> pd.DataFrame:
    """The outermost `cpu_op` rows inside profiler steps (autoprof's own left out)."""
    ev = ctx.events
    ops = isin_mask(ev["cat"], ("cpu_op",)) & (ev["step"].to_numpy() >= 0)
    ops &= ~autoprof_mask(ev)
    outer = ops & ~has_ancestor_in(parent_positions(ev), ops)
    return ev.loc[outer, ["name", "dur_us", "step", "rank"]]


def cpu_dispatch_bound(ctx: Analysis) -> Diagnostic | None:
    ops = _outermost_ops(ctx)
    steps = max(len(ctx.breakdown.steps), 1)
    if ops.empty:
        return None
    per_step = len(ops) / steps
    median_us = float(np.median(ops["dur_us"]))
    if per_step < DISPATCH_MIN_OPS or median_us >= DISPATCH_MEDIAN_US:
        return None
    names = ops["name"].astype(str).value_counts()
    top, count = str(names.index[0]), int(names.iloc[0])
    bd = ctx.breakdown.mean()
    pct: dict[str, float] = bd["buckets_pct"]  # type: ignore[assignment]
    ev = ctx.events
    cpu_ops = ev[isin_mask(ev["cat"], ("cpu_op",)) & ~autoprof_mask(ev)]
    heavy = cpu_ops.groupby(cpu_ops["name"].astype(str))["self_us"].sum().nlargest(TOP_HEAVIEST)
    evidence: dict[str, Any] = {
        "ops_per_step": round(per_step, 1), "op_median_us": round(median_us, 2),
        "most_frequent_op": top, "most_frequent_per_step": round(count / steps, 1),
        "in_ops_pct": round(pct.get("host_cpu_work", 0.0), 1),
        "between_ops_pct": round(pct.get("host_untraced", 0.0), 1),
        "heaviest_self_us_per_step": {str(k): round(float(v) / steps, 1)
                                      for k, v in heavy.items()},
    }
    return Diagnostic(
        id="cpu-dispatch-bound", severity="warning",
        message=(f"{per_step:.0f} ops per step with a median of {fmt_us(median_us)} each "
                 f"({top} x{count / steps:.0f} per step): the step is spent issuing tiny ops; "
                 f"{evidence['in_ops_pct']:.0f}% of it inside ops, "
                 f"{evidence['between_ops_pct']:.0f}% between them (Python)."),
        evidence=evidence,
        hint=("Batch or vectorise: one op over a whole tensor instead of a Python loop of "
              "small ones (index with a tensor, not element by element; torch.stack once); "
              "torch.compile can fuse what remains."),
    )


def data_loader(ctx: Analysis) -> Diagnostic | None:
    bd = ctx.breakdown
    n = len(bd.steps)
    step_us = float(bd.steps["step_us"].mean()) if n else 0.0
    if not step_us > 0 or bd.where.empty:
        return None
    names = bd.where["name"].astype(str)
    rows = bd.where[names.str.contains(DATA_LOADER_NAME).to_numpy()]
    if rows.empty:
        return None
    us = float(rows["us"].sum()) / n
    pct = 100.0 * us / step_us
    if pct < DATA_LOADER_MIN_PCT:
        return None
    region = str(rows.groupby("name")["us"].sum().idxmax())
    idle = "with the GPU idle" if ctx.has_gpu else "on the host"
    return Diagnostic(
        id="data-loader", severity="critical" if pct >= 50 else "warning",
        message=(f"the data loader holds {fmt_us(us)} of each step ({pct:.0f}%) {idle} "
                 f"({region})."),
        evidence={"us_per_step": round(us, 1), "pct_of_step": round(pct, 1), "where": region},
        hint=("Load in the background: DataLoader(num_workers>0, pin_memory=True, "
              "persistent_workers=True, prefetch_factor); move decoding and augmentation out "
              "of the step or onto the GPU."),
    )
