"""Changes applied to a replay plan: each `Change` edits costs, durations or waits.

- `CudaGraph` (`cuda_graph.py`): the host time and the launch costs inside the region's
  spans go (except a DataLoader's fetch: its CPU work stays); one graph launch per span,
  after the copy of the batch into the static inputs (a launch on the host, `input_copy_us`
  on the GPU); the captured kernels run `kernel_gap_us` apart; the spans' syncs (a batch
  copy's excepted) lose their waits, a selection's machinery goes, and a capturable
  optimizer's kernels join.
- `RemoveSync`: the matching syncs lose their waits.
- `RemoveSelection`: a data-dependent selection's ops (`selection.py`) go, host and GPU.
- `FuseOptimizer`: the optimizer's ops become one op and one launch per step; its kernels
  keep their time above the device's per-kernel floor, the floor paid once a step.
- `FoldBiasAdd`: the bias adds after a matrix product go, host and GPU.
- `RemoveSpans`: the host spans a catalogue entry names go, with their calls' GPU work.
- `FuseChains` (`fuse_chain.py`): each chain of kernels runs as one, launched once.
- `RemoveScaler`: GradScaler's ops and its found_inf sync go, host and GPU (`scaler.py`).
- `OverlapBetweenCalls`: the main thread's host time inside a step but outside the call goes.
- `HideLoader`: the host time inside DataLoader fetches goes (on every thread); with
  `workers`, each step takes at least its fetch time over the workers.
- `NonBlockingCopies` (`non_blocking.py`): the copy and its op's sync lose their waits, its
  call costs a launch, the copy runs `speedup` times faster.
- `FasterKernels`: the matching kernels' durations are divided by `factor`.
- `ScaleHost`: every host cost (or those inside or outside a region) is multiplied by
  `factor`.
- `SyncEachStep`: each step's end marker waits for the last item on every stream.

The host spans the changes act on are found in `host_spans.py`; removing spans with the
calls made inside them is `remove.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from autoprof.analysis.metrics.replay.capturable import tiny_kernel_us
from autoprof.analysis.metrics.replay.changes import (
    Change,
    CudaGraph,
    FasterKernels,
    FoldBiasAdd,
    FuseChains,
    FuseOptimizer,
    HideLoader,
    NonBlockingCopies,
    OverlapBetweenCalls,
    RemoveScaler,
    RemoveSelection,
    RemoveSpans,
    RemoveSync,
    ScaleHost,
    SyncEachStep,
)
from autoprof.analysis.metrics.replay.cuda_graph import cuda_graph
from autoprof.analysis.metrics.replay.fuse_chain import fuse_chains
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.hide import hide_calls, uncovered_by
from autoprof.analysis.metrics.replay.host_spans import (
    host_spans,
    minus,
    not_capturable,
    pace_spans,
    under,
)
from autoprof.analysis.metrics.replay.non_blocking import non_blocking
from autoprof.analysis.metrics.replay.remove import remove_rows, remove_spans
from autoprof.analysis.metrics.replay.scaler import scaler_spans
from autoprof.analysis.metrics.replay.selection import bias_fold_spans, selection_rows
from autoprof.analysis.metrics.replay.simulate import Plan
from autoprof.analysis.metrics.replay.waits import END, LAUNCH
from autoprof.analysis.metrics.stats import Coverage, isin_mask, name_matches


def apply_changes(g: Graph, base: Plan, changes: Sequence[Change]) -> Plan:
    """A copy of `base` with every change applied, in order."""
    plan = base.copy()
    for change in changes:
        _apply(g, plan, change)
    return plan


def _apply(g: Graph, plan: Plan, change: Change) -> None:
    if isinstance(change, ScaleHost):
        _scale_host(g, plan, change)
    elif isinstance(change, RemoveSync):
        _remove_syncs(g, plan, change.op)
    elif isinstance(change, OverlapBetweenCalls):
        _overlap_between_calls(g, plan, change)
    elif isinstance(change, HideLoader):
        _hide_loader(g, plan, change)
    elif isinstance(change, NonBlockingCopies):
        non_blocking(g, plan, change)
    elif isinstance(change, FasterKernels):
        plan.item_dur_us[_kernels(g, change)] /= change.factor
    elif isinstance(change, CudaGraph):
        cuda_graph(g, plan, change)
    elif isinstance(change, SyncEachStep):
        _sync_each_step(g, plan, change)
    elif isinstance(change, RemoveSpans):
        remove_spans(g, plan, np.asarray(change.starts_us, float),
                     np.asarray(change.ends_us, float))
    else:
        _apply_op_change(g, plan, change)


def _apply_op_change(g: Graph, plan: Plan,
                     change: RemoveSelection | FuseOptimizer | FoldBiasAdd | RemoveScaler |
                     FuseChains) -> None:
    """The changes that remove or fuse ops the trace's shapes and names pick."""
    if isinstance(change, FuseChains):
        fuse_chains(g, plan, change)
    elif isinstance(change, RemoveSelection):
        remove_rows(g, plan, selection_rows(g))
    elif isinstance(change, RemoveScaler):
        remove_spans(g, plan, *scaler_spans(g))
    elif isinstance(change, FuseOptimizer):
        _fuse_optimizer(g, plan, change)
    else:
        remove_spans(g, plan, *bias_fold_spans(g))


def _sync_each_step(g: Graph, plan: Plan, change: SyncEachStep) -> None:
    """Each step's end marker waits for the last item launched so far on every stream."""
    wake_us = change.wake_us
    if wake_us is None:
        syncs = g.call_is_sync & np.array([bool(w) for w in plan.call_waits], bool)
        wake_us = float(np.median(plan.call_wake_us[syncs])) if syncs.any() else 0.0
    for c, last in _last_at_step_ends(g):
        plan.call_waits[c] = sorted(set(plan.call_waits[c]) | set(last))
        plan.call_wake_us[c] = wake_us


def _last_at_step_ends(g: Graph) -> list[tuple[int, tuple[int, ...]]]:
    """Each step's end marker and the last item launched before it on every stream, found
    once per graph."""
    kept = g.kept.get("last_at_step_ends")
    if isinstance(kept, list):
        return kept
    out: list[tuple[int, tuple[int, ...]]] = []
    last: dict[int, int] = {}
    items = np.argsort(g.item_call, kind="stable").tolist()  # launch order
    item_call, item_stream = g.item_call.tolist(), g.item_stream.tolist()
    k, n_items = 0, len(items)
    for c in np.flatnonzero(g.call_kind == END).tolist():
        while k < n_items and item_call[items[k]] < c:
            last[item_stream[items[k]]] = items[k]
            k += 1
        out.append((c, tuple(last.values())))
    g.kept["last_at_step_ends"] = out
    return out


def _remove_syncs(g: Graph, plan: Plan, op: str | None) -> None:
    names = g.names()
    for c in np.flatnonzero(g.call_is_sync).tolist():
        if op is None or under(g, int(g.call_row[c]), op, names):
            plan.call_waits[c] = ()


def _removed(g: Graph, spans: Coverage, c: int) -> float:
    """How much of the host stretch before call `c` lies inside `spans`."""
    return spans.covered(float(g.call_gap_lo_us[c]), float(g.call_ts_us[c]))


def _scale_host(g: Graph, plan: Plan, change: ScaleHost) -> None:
    if change.region is None:
        plan.call_cost_us *= change.factor
        plan.call_gap_us *= change.factor
        plan.pace_in *= change.factor
        plan.pace_out *= change.factor
        return
    if plan.pace_region not in (None, change.region):
        raise ValueError("replay: the host is scaled inside one region at most")
    plan.pace_region = change.region
    spans = host_spans(g, change.region)
    key = f"removed:{change.region}"
    if key not in g.memo:  # how much of each call's stretch lies in the region's spans
        g.memo[key] = np.array([_removed(g, spans, c) for c in range(g.n_calls)], float)
    gap_us = g.busy_gap_us()
    pace = plan.pace_in if change.inside else plan.pace_out
    wall = g.call_ts_us - g.call_gap_lo_us
    run = np.flatnonzero(wall > 0)
    share = g.memo[key][run] / wall[run]
    share = share if change.inside else 1.0 - share
    share = np.where(0.0 > share, 0.0, share)
    share = np.where(1.0 < share, 1.0, share)
    # the part's own time at its pace (a non-main thread's stretch: its busy time)
    part = share * gap_us[run] * pace[run]
    left = plan.call_gap_us[run] + (change.factor - 1.0) * part
    plan.call_gap_us[run] = np.where(0.0 > left, 0.0, left)
    plan.call_cost_us[(spans.spans_at(g.call_ts_us) >= 0) == change.inside] *= change.factor
    pace *= change.factor


def _overlap_between_calls(g: Graph, plan: Plan, change: OverlapBetweenCalls) -> None:
    steps = host_spans(g, None)
    calls = host_spans(g, change.call_region)
    fetches = minus(not_capturable(g), calls) if change.keep_fetches else None
    region = pace_spans(g, plan)

    measured, measured_many = uncovered_by(steps, calls, fetches)
    hide_calls(g, plan, np.flatnonzero(g.call_thread == g.main_thread), measured, region,
               1.0 - change.remaining, key=f"{change!r}|{plan.pace_region}",
               measured_many=measured_many)


def _hide_loader(g: Graph, plan: Plan, change: HideLoader) -> None:
    fetches = not_capturable(g)
    region = pace_spans(g, plan)
    fetch_us = np.zeros(len(g.steps))  # each step's fetch time at the plan's host pace
    took_us = hide_calls(g, plan, np.arange(g.n_calls), fetches.covered, region,
                         1.0 - change.remaining, measured_many=fetches.covered_many).tolist()
    for c in range(g.n_calls):
        took = took_us[c]
        # other threads' stretches span the fetch too; the workers fetch in processes of
        # their own, at most at the profiled pace (a loop slower untraced is its process
        # contending, not the fetch's work)
        if took > 0 and g.call_thread[c] == g.main_thread:
            fetch_us[g.call_step[c]] += min(took, fetches.covered(
                float(g.call_gap_lo_us[c]), float(g.call_ts_us[c])))
    if change.workers:
        plan.step_floor_us = np.maximum(plan.step_floor_us, fetch_us / change.workers)


def _fuse_optimizer(g: Graph, plan: Plan, change: FuseOptimizer) -> None:
    ev = g.events
    cpu = isin_mask(ev["lane"], ("cpu",))
    hit = cpu & name_matches(ev["name"], re.compile("^" + re.escape(change.region_prefix)))
    if not hit.any():
        return
    ts, end = ev["ts_us"].to_numpy(float), ev["end_us"].to_numpy(float)
    regions = Coverage(ts[hit], end[hit])
    op = cpu & isin_mask(ev["cat"], ("cpu_op",))
    up = g.row_parent
    outer = op & ~np.where(up >= 0, op[np.clip(up, 0, None)], False)
    span_all = regions.spans_at(ts)
    inside = (span_all >= 0) & outer
    if not inside.any():
        return
    # each step's stretch from its first op to its last: the ops and the implementation's
    # Python between them (its loop over the parameters) go; the gathering before stays
    span_of = span_all[inside]
    spans = np.unique(span_of)
    ops = Coverage(np.array([ts[inside][span_of == k].min() for k in spans]),
                   np.array([end[inside][span_of == k].max() for k in spans]))
    kept_us = float(np.median(end[inside] - ts[inside]))  # the fused op's own dispatch
    tiny_us = tiny_kernel_us(g)
    region = pace_spans(g, plan)
    seen: set[int] = set()
    hide_calls(g, plan, np.arange(g.n_calls), ops.covered, region,
               measured_many=ops.covered_many)
    for c in range(g.n_calls):
        span = regions.span_at(float(g.call_ts_us[c]))
        if span < 0 or g.call_kind[c] != LAUNCH or g.call_is_sync[c]:
            continue
        first = span not in seen
        seen.add(span)
        plan.call_cost_us[c] = plan.launch_us + kept_us * float(plan.pace_out[c]) \
            if first else 0.0
        items = g.call_items[c]
        plan.item_latency_us[items] = plan.latency_us
        # one multi-tensor kernel does the work of many: each kernel keeps its time above
        # the device's shortest kernels' (the bytes it moves), the floor paid once a step
        kernels = np.asarray(items, dtype=np.int64)
        kernels = kernels[g.item_cats()[kernels] == "kernel"]
        plan.item_dur_us[kernels] = np.maximum(plan.item_dur_us[kernels] - tiny_us, 0.0)
        if first and len(kernels):
            plan.item_dur_us[kernels[0]] += tiny_us
        plan.item_gap_us[kernels] = 0.0


def _kernels(g: Graph, change: FasterKernels) -> np.ndarray:
    """Positions of the replayed kernels the change names."""
    mask = (g.item_cats() == "kernel") & (g.item_call >= 0)
    if change.kernel is not None:
        names = g.names()[g.item_row]
        mask &= np.fromiter((change.kernel in n for n in names), bool, len(names))
    if change.op is not None:
        op_label = g.events["op_row"].to_numpy()[g.item_row]
        label_names = dict(zip(g.events["label"].tolist(), g.names().tolist(), strict=True))
        mask &= np.array([label_names.get(int(r)) == change.op for r in op_label], bool)
    return np.asarray(np.flatnonzero(mask), dtype=np.int64)


