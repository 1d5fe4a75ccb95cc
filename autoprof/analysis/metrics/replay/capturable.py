"""What capturing a training step adds beside the step as written: a capturable optimizer.

A CUDA graph cannot capture a step count kept on the host, so Adam and AdamW must be built
with ``capturable=True`` before their step is captured. Their foreach implementation then
keeps each parameter's step count on the device and computes the bias corrections there: on
an H200 with torch 2.11 (``benchmarks/gpu/graph_kernels.py``), AdamW over the 40 parameters
of a small GPT-2 ran 88 more kernels a step, 80 of them one-element kernels of
``torch._foreach_pow`` with a scalar base (one per tensor, twice: ``beta1 ** step`` and
``beta2 ** step``) and 8 more foreach launches (the step's increment and the corrections'
arithmetic), +120 us of GPU time; the graph replayed 404 kernels where the step as written
ran 291.

The trace shows the form that is not capturable by its step count: in the optimizer's step
(``Optimizer.step#Adam.step``, ``Optimizer.step#AdamW.step``) an ``aten::_foreach_add_`` on
host tensors, whose per-tensor ``aten::add_`` children launch nothing; their count is the
parameter group's size. A fused or already capturable optimizer, or the per-parameter loop
(``foreach=False``), shows no such op and adds nothing here. The loop made capturable with
``foreach=False`` kept runs 12 more one-element kernels a parameter (torch's
``_single_tensor_adam``), while the foreach form a user gets by leaving ``foreach`` unset
runs fewer kernels than the loop; a step written ``fused=False`` shows the same loop as one
written ``foreach=False``, so which form is captured is not in the trace, and the loop's
kernels are replayed as traced (docs/analysis.md has what each choice gave on the truth sets).

Each added kernel takes `tiny_kernel_us`: the 10th percentile of the trace's kernel
durations (the device's shortest kernels: 1.09 us in that GPT-2's trace, against the 1.48 us
the 80 one-element kernels took on average).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.waits import LAUNCH
from autoprof.analysis.metrics.stats import Coverage, cpu_mask, isin_mask, name_matches

STEP_REGIONS = ("Optimizer.step#Adam.step", "Optimizer.step#AdamW.step")
STEP_COUNT_OP = "aten::_foreach_add_"
PER_TENSOR_ADD = "aten::add_"
KERNELS_PER_PARAMETER = 2  # beta1 ** step, beta2 ** step: one kernel per tensor each
LAUNCHES_PER_GROUP = 8  # the step's increment and the corrections' foreach arithmetic
TINY_KERNEL_PERCENTILE = 10.0
MULTI_TENSOR_OP = re.compile(r"^aten::_(foreach|fused)_")  # the foreach and fused forms' ops


@dataclass(frozen=True)
class OptimizerStep:
    """One optimizer step the trace shows with host step counts: its host span (``ts_us``,
    ``end_us``) and the kernels its capturable form adds (`extra_kernels`)."""

    ts_us: float
    end_us: float
    extra_kernels: int


def host_count_steps(g: Graph) -> list[OptimizerStep]:
    """The Adam/AdamW steps of the graph's events whose step counts live on the host."""
    ev = g.events
    names = ev["name"]
    ts, end = ev["ts_us"].to_numpy(float), ev["end_us"].to_numpy(float)
    regions = np.flatnonzero(isin_mask(names, STEP_REGIONS))
    if not len(regions):
        return []
    counts = np.flatnonzero(isin_mask(names, (STEP_COUNT_OP,)))
    parents = g.row_parent[np.flatnonzero(isin_mask(names, (PER_TENSOR_ADD,)))]
    per_count = np.bincount(np.searchsorted(counts, parents[np.isin(parents, counts)]),
                            minlength=len(counts))
    launched = (g.call_kind == LAUNCH) & (g.call_row >= 0)
    launch_ts = g.call_ts_us[launched]
    launch_thread = g.call_thread[launched]
    out = []
    for r in regions.tolist():
        params = groups = 0
        for i in np.flatnonzero((ts[counts] >= ts[r]) & (end[counts] <= end[r])).tolist():
            k = int(counts[i])
            launches = (launch_thread == g.row_thread[k]) & (launch_ts >= ts[k]) & \
                (launch_ts <= end[k])
            if per_count[i] and not launches.any():  # per-tensor adds on host counts
                params += int(per_count[i])
                groups += 1
        if groups:
            out.append(OptimizerStep(float(ts[r]), float(end[r]),
                                     KERNELS_PER_PARAMETER * params + LAUNCHES_PER_GROUP * groups))
    return out


def tiny_kernel_us(g: Graph) -> float:
    """The duration of the device's shortest kernels in the trace (`TINY_KERNEL_PERCENTILE`
    of the kernels' durations; 0 without kernels)."""
    if "tiny_kernel_us" not in g.memo:  # the same for every change of the graph
        durations = g.item_dur_us[isin_mask(g.events["cat"], ("kernel",))[g.item_row]]
        g.memo["tiny_kernel_us"] = np.asarray(
            np.percentile(durations, TINY_KERNEL_PERCENTILE) if len(durations) else 0.0)
    return float(g.memo["tiny_kernel_us"])


def per_parameter_steps(events: pd.DataFrame) -> bool:
    """Whether an Adam/AdamW step of the trace runs the per-parameter loop (`foreach=False`
    or `fused=False`): a step region with no foreach or fused op inside it. Its capturable
    form depends on what the user passes (module doc)."""
    host = cpu_mask(events)
    names = events["name"]
    regions = host & isin_mask(names, STEP_REGIONS)
    if not regions.any():
        return False
    ts, end = events["ts_us"].to_numpy(float), events["end_us"].to_numpy(float)
    multi = host & name_matches(names, MULTI_TENSOR_OP)
    starts, ends = ts[regions], end[regions]
    inside = Coverage(ts[multi], end[multi])
    return bool((inside.covered_many(starts, ends) <= 0.0).any())
