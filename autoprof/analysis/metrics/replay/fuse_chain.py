"""`FuseChains` in a replay plan: each chain of kernels run as one fused kernel.

A chain is a run of consecutive memory-bound kernels (elementwise, reductions, a
concatenation's copy) that one source line launches (diagnose/fuse_elementwise.py finds
them). Fused, the chain reads its inputs and writes its result once instead of passing every
intermediate through memory: the chain's first kernel takes the time of its longest kernel
(one full pass over the chain's largest tensor, which the longest kernel already makes), the
others take none and start with no gap, and their launches cost the host nothing (one launch
for the chain). The ops' own host time stays: a fused op or a compiled function still
dispatches, and the replay does not guess by how much less.
"""

from __future__ import annotations

import numpy as np

from autoprof.analysis.metrics.replay.changes import FuseChains
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.simulate import Plan


def fuse_chains(g: Graph, plan: Plan, change: FuseChains) -> None:
    """Each chain of `change` (events-table labels of its kernels, in launch order) replayed
    as one kernel (the module doc); chains outside the replayed steps are skipped."""
    labels = g.events["label"].to_numpy()[g.item_row]
    position = {int(label): i for i, label in enumerate(labels.tolist())}
    for chain in change.chains:
        items = np.array([position[k] for k in chain if k in position], dtype=np.int64)
        if len(items) < 2:
            continue
        fused_us = float(plan.item_dur_us[items].max())
        plan.item_dur_us[items[1:]] = 0.0
        plan.item_gap_us[items[1:]] = 0.0
        plan.item_dur_us[items[0]] = fused_us
        calls = g.item_call[items[1:]]
        plan.call_cost_us[calls[calls >= 0]] = 0.0
