"""Removing host spans from a replay plan: the host time inside them, and the calls made there
with their cost, GPU work and waits."""

from __future__ import annotations

import numpy as np

from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.hide import hide_calls
from autoprof.analysis.metrics.replay.host_spans import pace_spans
from autoprof.analysis.metrics.replay.simulate import Plan
from autoprof.analysis.metrics.stats import Coverage


def remove_rows(g: Graph, plan: Plan, rows: np.ndarray) -> None:
    """The host rows at `rows` gone: their host time, and their calls' cost, GPU work and
    waits."""
    remove_spans(g, plan, g.events["ts_us"].to_numpy(float)[rows],
                  g.events["end_us"].to_numpy(float)[rows])


def remove_spans(g: Graph, plan: Plan, starts: np.ndarray, ends: np.ndarray) -> None:
    """The host time inside the spans gone, and the calls made there: their cost, GPU work
    and waits."""
    if not len(starts):
        return
    spans = Coverage(starts, ends)
    region = pace_spans(g, plan)
    hide_calls(g, plan, np.arange(g.n_calls), spans.covered, region,
               measured_many=spans.covered_many)
    hit = (g.call_row >= 0) & (spans.spans_at(g.call_ts_us) >= 0)
    calls = np.flatnonzero(hit)
    plan.call_cost_us[calls] = 0.0
    items: list[int] = []  # their GPU work, zeroed at once
    for c in calls.tolist():
        plan.call_waits[c] = ()
        items.extend(g.call_items[c])
    plan.item_dur_us[items] = 0.0
    plan.item_latency_us[items] = 0.0
    plan.item_gap_us[items] = 0.0
