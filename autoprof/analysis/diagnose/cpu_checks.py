"""Findings about host time that the GPU-centred checks do not cover.

- `cpu-dispatch-bound` (no GPU work): outermost ops shorter than SHORT_OP_US (20 us) hold at
  least DISPATCH_MIN_PCT of the steps, and a step issues at least DISPATCH_MIN_OPS outermost
  ops: the step is framework dispatch, not math. Its measure is that share (``short_ops_pct``):
  many ops with a short median are not enough (a transformer step issues hundreds of 10 us ops
  beside a few matrix products that hold the time). Evidence: the share, ops per step, the most
  frequent op, time in ops vs between them, heaviest ops by self time.
- `data-loader`: a DataLoader's `__next__` (and the untraced time inside it) holds at least
  DATA_LOADER_MIN_PCT of the step while the GPU is idle (or, on CPU, of the step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.called_steps import called_steps
from autoprof.analysis.diagnose.cold_start_cpu import is_compiled
from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME
from autoprof.analysis.metrics.cpu_ops import SHORT_OP_US, heavy_ops, outermost_ops
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

DISPATCH_MIN_PCT = 30.0  # share of the step inside ops shorter than SHORT_OP_US
DISPATCH_MIN_OPS = 100
DATA_LOADER_MIN_PCT = 10.0
TOP_HEAVIEST = 3


def _dispatch_evidence(ctx: Analysis, ops: pd.DataFrame, short_pct: float,
                       steps: int) -> dict[str, Any]:
    names = ops["name"].astype(str).value_counts()
    pct: dict[str, float] = ctx.breakdown.mean()["buckets_pct"]  # type: ignore[assignment]
    heavy = heavy_ops(ctx.events, called_steps(ctx)).head(TOP_HEAVIEST)
    return {
        "short_ops_pct": round(short_pct, 1), "short_ops_pct_threshold": DISPATCH_MIN_PCT,
        "short_op_us": SHORT_OP_US, "ops_per_step": round(len(ops) / steps, 1),
        "op_median_us": round(float(np.median(ops["dur_us"])), 2),
        "most_frequent_op": str(names.index[0]),
        "most_frequent_per_step": round(int(names.iloc[0]) / steps, 1),
        "in_ops_pct": round(pct.get("host_cpu_work", 0.0), 1),
        "between_ops_pct": round(pct.get("host_untraced", 0.0), 1),
        "heaviest_self_us_per_step": {str(n): round(float(v), 1) for n, v in zip(
            heavy["name"], heavy["self_us_per_step"], strict=True)},
    }


def cpu_dispatch_bound(ctx: Analysis) -> Diagnostic | None:
    steps = called_steps(ctx)
    step_us = steps["cpu_span_us"].to_numpy(float) if not steps.empty else np.zeros(0)
    if not step_us.sum() > 0:
        return None
    ops = outermost_ops(ctx.events, steps)
    if len(ops) < DISPATCH_MIN_OPS * len(steps):
        return None
    short = 100.0 * float(ops.loc[ops["dur_us"] < SHORT_OP_US, "dur_us"].sum()) / step_us.sum()
    if short < DISPATCH_MIN_PCT:
        return None
    ev = _dispatch_evidence(ctx, ops, short, len(steps))
    return Diagnostic(
        id="cpu-dispatch-bound", severity="warning",
        message=(f"ops shorter than {fmt_us(SHORT_OP_US)} hold {short:.0f}% of the step "
                 f"({ev['ops_per_step']:.0f} ops per step, median {fmt_us(ev['op_median_us'])}; "
                 f"{ev['most_frequent_op']} x{ev['most_frequent_per_step']:.0f} per step): the "
                 f"step is spent issuing tiny ops; {ev['in_ops_pct']:.0f}% of it inside ops, "
                 f"{ev['between_ops_pct']:.0f}% between them (Python)."),
        evidence=ev,
        hint=("Batch or vectorise: one op over a whole tensor instead of a Python loop of "
              "small ones (index with a tensor, not element by element; torch.stack once)"
              + ("." if is_compiled(ctx) else "; torch.compile can fuse what remains.")),
    )


def _loader_us(where: pd.DataFrame) -> tuple[float, str | None]:
    """The time in DataLoader rows of a breakdown's holders, and the largest of them."""
    if where.empty:
        return 0.0, None
    rows = where[where["name"].astype(str).str.contains(DATA_LOADER_NAME).to_numpy()]
    if rows.empty:
        return 0.0, None
    return float(rows["us"].sum()), str(rows.groupby("name")["us"].sum().idxmax())


def data_loader(ctx: Analysis) -> Diagnostic | None:
    """The DataLoader's share of each step, inside the call and between calls (the
    caller's `for batch in loader` loop)."""
    bd = ctx.breakdown
    n = len(bd.steps)
    step_us = float(bd.steps["step_us"].mean()) if n else 0.0
    if not step_us > 0:
        return None
    inside_us, inside = _loader_us(bd.where)
    between_us, between = _loader_us(bd.between_where)
    us = (inside_us + between_us) / n
    pct = 100.0 * us / step_us
    if pct < DATA_LOADER_MIN_PCT:
        return None
    region = between if between_us > inside_us else inside
    place = "between calls, in the caller's loop" if between_us > inside_us else \
        "inside the call"
    idle = "with the GPU idle" if ctx.has_gpu else "on the host"
    return Diagnostic(
        id="data-loader", severity="critical" if pct >= 50 else "warning",
        message=(f"the data loader holds {fmt_us(us)} of each step ({pct:.0f}%) {idle} "
                 f"({region}, {place})."),
        evidence={"us_per_step": round(us, 1), "pct_of_step": round(pct, 1), "where": region,
                  "between_calls_us_per_step": round(between_us / n, 1)},
        hint=("Load in the background: DataLoader(num_workers>0, pin_memory=True, "
              "persistent_workers=True, prefetch_factor); move decoding and augmentation out "
              "of the step or onto the GPU."),
    )
