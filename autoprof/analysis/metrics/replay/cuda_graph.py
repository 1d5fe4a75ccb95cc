"""`CudaGraph` applied to a replay plan: the region's spans replayed as one graph launch each
(`changes.CudaGraph` says what goes and what each part costs), with what capture needs: the
syncs inside lose their waits, a selection's machinery goes, a capturable optimizer's kernels
join."""

from __future__ import annotations

import numpy as np

from autoprof.analysis.metrics._tree import has_ancestor_in
from autoprof.analysis.metrics.replay.capturable import host_count_steps, tiny_kernel_us
from autoprof.analysis.metrics.replay.changes import CudaGraph
from autoprof.analysis.metrics.replay.dense_form import dense_durations
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.hide import hide_calls, uncovered_by
from autoprof.analysis.metrics.replay.host_spans import host_spans, not_capturable, pace_spans
from autoprof.analysis.metrics.replay.remove import remove_rows
from autoprof.analysis.metrics.replay.selection import selection_rows
from autoprof.analysis.metrics.replay.simulate import Plan
from autoprof.analysis.metrics.replay.waits import LAUNCH
from autoprof.analysis.metrics.stats import Coverage, isin_mask
from autoprof.analysis.metrics.sync import of_batch_copy

# what a sync-free form of a selection no longer runs: the compaction that sizes the result
# and the sort-based scatter of its backward (the arithmetic on the values stays: the dense
# form computes it over the whole tensor)
SELECTION_MACHINERY = ("aten::nonzero", "aten::_index_put_impl_")


def _sync_free(g: Graph, plan: Plan, spans: Coverage) -> None:
    """Inside `spans`: the syncs lose their waits (a host-to-device copy's excepted), the
    ops fed by a data-dependent selection compute on the whole tensor (`dense_form.py`) and
    the selections' machinery goes (`CudaGraph.sync_free`)."""
    of_copy = of_batch_copy(g.events, g.events)
    for c in np.flatnonzero(g.call_is_sync & (g.call_row >= 0)).tolist():
        if spans.span_at(float(g.call_ts_us[c])) >= 0 and not of_copy[g.call_row[c]]:
            plan.call_waits[c] = ()
    plan.item_dur_us = dense_durations(g, plan.item_dur_us, spans, tiny_kernel_us(g))
    chosen = np.zeros(len(g.events), dtype=bool)
    chosen[selection_rows(g)] = True
    hit = (chosen | has_ancestor_in(g.row_parent, chosen)) & \
        isin_mask(g.events["name"], SELECTION_MACHINERY)
    rows = np.flatnonzero(hit & ~has_ancestor_in(g.row_parent, hit))
    starts = g.events["ts_us"].to_numpy(float)[rows]
    remove_rows(g, plan, rows[spans.spans_at(starts) >= 0])


def _capturable_optimizer(g: Graph, plan: Plan, change: CudaGraph, spans: Coverage) -> None:
    """Each Adam/AdamW step inside `spans` with host step counts: its capturable form's added
    kernels (`capturable.py`) queued with its first launch's GPU work, each the trace's
    shortest kernels' duration apart by the graph's kernel gap."""
    steps = host_count_steps(g)
    if not steps:
        return
    each_us = tiny_kernel_us(g) + change.kernel_gap_us
    for step in steps:
        if spans.span_at(step.ts_us) < 0:
            continue
        for c in np.flatnonzero((g.call_kind == LAUNCH) & (g.call_ts_us >= step.ts_us)
                                & (g.call_ts_us <= step.end_us)).tolist():
            if g.call_items[c]:
                plan.item_dur_us[g.call_items[c][0]] += step.extra_kernels * each_us
                plan.call_cost_us[c] += step.extra_kernels * change.per_kernel_us
                break


def cuda_graph(g: Graph, plan: Plan, change: CudaGraph) -> None:
    spans = host_spans(g, change.region)
    if change.sync_free:
        _sync_free(g, plan, spans)
    kept = not_capturable(g)
    seen: set[int] = set()
    copied: set[int] = set()
    region = pace_spans(g, plan)

    measured, measured_many = uncovered_by(spans, kept, floor=True)
    hide_calls(g, plan, np.arange(g.n_calls), measured, region, measured_many=measured_many)
    # the launches that wait for nothing, in call order, and the span holding each (-1: none)
    launches = [c for c in np.flatnonzero(g.call_kind == LAUNCH).tolist()
                if not plan.call_waits[c]]
    span_of = spans.spans_at(g.call_ts_us[launches]).tolist() if launches and len(spans.s) \
        else [-1] * len(launches)
    pace_of = plan.pace_in if region is not None else plan.pace_out
    captured: list[int] = []  # their items, queued as the graph queues them
    for c, span in zip(launches, span_of, strict=True):
        if span < 0:
            continue
        items = g.call_items[c]
        first = span not in seen
        seen.add(span)
        copy = change.input_copy_us > 0 and len(items) > 0 and span not in copied
        pace = float(pace_of[c])
        plan.call_cost_us[c] = (change.launch_us if first else 0.0) + \
            change.per_kernel_us * len(items) + (plan.launch_us * pace if copy else 0.0)
        if copy:  # the batch copied into the static inputs, before the captured kernels
            copied.add(span)
            plan.item_dur_us[items[0]] += change.input_copy_us
        captured.extend(items)
    plan.item_latency_us[captured] = plan.latency_us
    plan.item_gap_us[captured] = change.kernel_gap_us
    if change.capturable_optimizer:
        _capturable_optimizer(g, plan, change, spans)
