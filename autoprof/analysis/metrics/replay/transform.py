"""Changes applied to a replay plan: each `Change` edits costs, durations or waits.

- `CudaGraph`: the host time and the launch costs inside the region's spans go (except a
  DataLoader's fetch: its CPU work stays); one graph launch per span; the captured kernels
  run `kernel_gap_us` apart.
- `RemoveSync`: the matching syncs lose their waits.
- `OverlapBetweenCalls`: the main thread's host time inside a step but outside the call goes.
- `HideLoader`: the host time inside DataLoader fetches goes (on every thread).
- `NonBlockingCopies`: the copy loses its wait, its call costs a launch, the copy runs
  `speedup` times faster.
- `FasterKernels`: the matching kernels' durations are divided by `factor`.
- `ScaleHost`: every host cost is multiplied by `factor`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME
from autoprof.analysis.metrics.replay.changes import (
    Change,
    CudaGraph,
    FasterKernels,
    HideLoader,
    NonBlockingCopies,
    OverlapBetweenCalls,
    RemoveSync,
    ScaleHost,
)
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.simulate import Plan
from autoprof.analysis.metrics.replay.waits import END, LAUNCH, START
from autoprof.analysis.metrics.stats import Coverage

_DIRECTION = {"HtoD": re.compile(r"HtoD|Host -> Device"),
              "DtoH": re.compile(r"DtoH|Device -> Host")}


def apply_changes(g: Graph, base: Plan, changes: Sequence[Change]) -> Plan:
    """A copy of `base` with every change applied, in order."""
    plan = base.copy()
    for change in changes:
        if isinstance(change, ScaleHost):
            plan.call_cost_us *= change.factor
            plan.call_gap_us *= change.factor
        elif isinstance(change, RemoveSync):
            _remove_syncs(g, plan, change.op)
        elif isinstance(change, OverlapBetweenCalls):
            _overlap_between_calls(g, plan, change)
        elif isinstance(change, HideLoader):
            _hide_loader(g, plan, change)
        elif isinstance(change, NonBlockingCopies):
            _non_blocking(g, plan, change)
        elif isinstance(change, FasterKernels):
            plan.item_dur_us[_kernels(g, change)] /= change.factor
        else:
            _cuda_graph(g, plan, change)
    return plan


# --- which rows ---------------------------------------------------------------------------

def _names(g: Graph) -> np.ndarray:
    names: np.ndarray = g.events["name"].astype(str).to_numpy()
    return names


def _under(g: Graph, row: int, name: str, names: np.ndarray) -> bool:
    """Whether the row or a row above it is named `name`."""
    while row >= 0:
        if names[row] == name:
            return True
        row = int(g.row_parent[row])
    return False


def _spans(g: Graph, name: str | None) -> Coverage:
    """The spans of the host rows named `name` (None: the profiler steps), on any thread: a
    capture or a call holds the work other threads (autograd's) do meanwhile."""
    if name is None:
        return Coverage(g.call_ts_us[g.call_kind == START], g.call_ts_us[g.call_kind == END])
    cpu = (g.events["lane"].astype(str) == "cpu").to_numpy()
    hit = cpu & (_names(g) == name)
    if not hit.any():
        raise ValueError(f"replay: no host row named {name!r} in the events table")
    return Coverage(g.events["ts_us"].to_numpy(float)[hit],
                    g.events["end_us"].to_numpy(float)[hit])


def _removed(g: Graph, spans: Coverage, c: int) -> float:
    """How much of the host stretch before call `c` lies inside `spans`."""
    return spans.covered(float(g.call_gap_lo_us[c]), float(g.call_ts_us[c]))


def _inside(spans: Coverage, ts: float) -> int:
    """Index of the span holding `ts` (-1: none)."""
    k = int(np.searchsorted(spans.s, ts, "right")) - 1
    return k if k >= 0 and ts < spans.e[k] else -1


# --- the changes ----------------------------------------------------------------------------

def _remove_syncs(g: Graph, plan: Plan, op: str | None) -> None:
    names = _names(g)
    for c in np.flatnonzero(g.call_is_sync).tolist():
        if op is None or _under(g, int(g.call_row[c]), op, names):
            plan.call_waits[c] = []


def _overlap_between_calls(g: Graph, plan: Plan, change: OverlapBetweenCalls) -> None:
    steps = _spans(g, None)
    calls = _spans(g, change.call_region)
    hidden = 1.0 - change.remaining
    gap_us = g.busy_gap_us()
    for c in np.flatnonzero(g.call_thread == g.main_thread).tolist():
        outside = _removed(g, steps, c) - _removed(g, calls, c)
        scale = plan.call_gap_us[c] / max(gap_us[c], 1e-12)
        plan.call_gap_us[c] = max(plan.call_gap_us[c] - hidden * max(outside, 0.0) * scale,
                                  0.0)


def _hide_loader(g: Graph, plan: Plan, change: HideLoader) -> None:
    fetches = _not_capturable(g)
    hidden = 1.0 - change.remaining
    gap_us = g.busy_gap_us()
    for c in range(g.n_calls):
        inside = _removed(g, fetches, c)
        if inside > 0:
            scale = plan.call_gap_us[c] / max(gap_us[c], 1e-12)
            plan.call_gap_us[c] = max(plan.call_gap_us[c] - hidden * inside * scale, 0.0)


def _non_blocking(g: Graph, plan: Plan, change: NonBlockingCopies) -> None:
    names = _names(g)
    wanted = [_DIRECTION[d] for d in change.directions]
    call_us = plan.launch_us if change.call_us is None else change.call_us
    for c in np.flatnonzero(g.call_kind == LAUNCH).tolist():
        items = g.call_items[c]
        copies = [i for i in items if any(p.search(names[g.item_row[i]]) for p in wanted)]
        if not copies:
            continue
        if g.call_is_sync[c]:
            plan.call_waits[c] = []
        plan.call_cost_us[c] = min(plan.call_cost_us[c], call_us)
        plan.item_dur_us[copies] /= change.speedup


def _kernels(g: Graph, change: FasterKernels) -> np.ndarray:
    """Positions of the replayed kernels the change names."""
    cats = g.events["cat"].astype(str).to_numpy()[g.item_row]
    mask = (cats == "kernel") & (g.item_call >= 0)
    if change.kernel is not None:
        names = _names(g)[g.item_row]
        mask &= np.fromiter((change.kernel in n for n in names), bool, len(names))
    if change.op is not None:
        op_label = g.events["op_row"].to_numpy()[g.item_row]
        label_names = dict(zip(g.events["label"].tolist(), _names(g).tolist(), strict=True))
        mask &= np.array([label_names.get(int(r)) == change.op for r in op_label], bool)
    return np.asarray(np.flatnonzero(mask), dtype=np.int64)


def _not_capturable(g: Graph) -> Coverage:
    """The host spans a CUDA graph cannot replace: the DataLoader's fetches (their CPU work
    runs whether the GPU work is captured or not)."""
    names = _names(g)
    hit = np.fromiter((bool(DATA_LOADER_NAME.search(n)) for n in names), bool, len(names))
    return Coverage(g.events["ts_us"].to_numpy(float)[hit],
                    g.events["end_us"].to_numpy(float)[hit])


def _cuda_graph(g: Graph, plan: Plan, change: CudaGraph) -> None:
    spans = _spans(g, change.region)
    kept = _not_capturable(g)
    seen: set[int] = set()
    gap_us = g.busy_gap_us()
    for c in range(g.n_calls):
        removed = max(_removed(g, spans, c) - _removed(g, kept, c), 0.0)
        if removed > 0:
            scale = plan.call_gap_us[c] / max(gap_us[c], 1e-12)
            plan.call_gap_us[c] = max(plan.call_gap_us[c] - removed * scale, 0.0)
        if g.call_kind[c] != LAUNCH or g.call_is_sync[c]:
            continue
        span = _inside(spans, float(g.call_ts_us[c]))
        if span < 0:
            continue
        items = g.call_items[c]
        first = span not in seen
        seen.add(span)
        plan.call_cost_us[c] = (change.launch_us if first else 0.0) + \
            change.per_kernel_us * len(items)
        plan.item_latency_us[items] = plan.latency_us
        plan.item_gap_us[items] = change.kernel_gap_us
