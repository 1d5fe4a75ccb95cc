"""Invariants of self_vs_total on random well-nested call trees (hypothesis)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ops_events import cpu, events, kernel

from autoprof.analysis.metrics.ops import self_vs_total

NAMES = ["aten::sum", "aten::mm", "rec"]  # few names: recursion and folding happen often


@st.composite
def call_trees(draw: st.DrawFn) -> tuple[pd.DataFrame, float, int]:
    """Events of random nested calls (children strictly inside parents, siblings apart),
    each op launching a kernel or not; returns (events, root time, kernel count)."""
    rows: list[dict] = []
    kernels: list[dict] = []

    def grow(start: float, length: float, parent: int, depth: int) -> None:
        me = len(rows)
        rows.append(cpu(draw(st.sampled_from(NAMES)), start, length, parent=parent))
        if draw(st.booleans()):
            kernels.append(kernel("k", 1e6 + len(kernels), draw(st.integers(1, 9)), op_row=me))
        n_children = draw(st.integers(0, 3)) if depth < 3 else 0
        slot = length / (n_children + 1)
        for i in range(n_children):
            grow(start + slot * i + slot / 4, slot / 2, me, depth + 1)

    roots = draw(st.integers(1, 3))
    for i in range(roots):
        grow(i * 1000.0, 800.0, -1, 0)
    ops_rows = rows + [dict(k, op_row=k["op_row"]) for k in kernels]
    return events(*ops_rows), roots * 800.0, len(kernels)


@settings(max_examples=60, deadline=None)
@given(call_trees())
def test_invariants_on_random_trees(tree: tuple[pd.DataFrame, float, int]) -> None:
    ev, root_us, n_kernels = tree
    ops = self_vs_total(ev)
    cpu_ops, gpu = ops[ops["lane"] == "cpu"], ops[ops["lane"] == "gpu"]
    kernel_us = ev.loc[ev["is_gpu_work"], "dur_us"].sum()
    # Self CPU partitions the roots' time; no Self is negative or above its total
    assert cpu_ops["self_cpu_us"].sum() == pytest.approx(root_us)
    assert (ops["self_cpu_us"] >= -1e-9).all()
    assert (ops["self_cpu_us"] <= ops["cpu_total_us"] + 1e-9).all()
    assert (ops["self_device_us"] <= ops["device_total_us"] + 1e-9).all()
    # each kernel is Self device once on its op and once on its own row
    assert cpu_ops["self_device_us"].sum() == pytest.approx(kernel_us)
    assert gpu["self_device_us"].sum() == pytest.approx(kernel_us)
    assert gpu["calls"].sum() == n_kernels
    # only folded ops (sole child of a same-name op) go uncounted
    assert cpu_ops["calls"].sum() <= int((~ev["is_gpu_work"]).sum())
    # a name's CPU total is at least its longest call and at most all its calls
    for name, group in ev[~ev["is_gpu_work"]].groupby("name"):
        total = cpu_ops.set_index("name").loc[name, "cpu_total_us"]
        assert group["dur_us"].max() - 1e-9 <= total <= group["dur_us"].sum() + 1e-9
