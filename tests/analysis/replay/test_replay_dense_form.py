"""A CUDA graph of a step that selects with a boolean mask: the captured sync-free form
computes on the whole mask, so the kernels the selection fed grow by the mask's size over the
selected count, above the device's shortest kernels' duration; times in microseconds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.attrbuild import Trace

from autoprof.analysis.metrics.replay import build_graph, replay_step
from autoprof.analysis.metrics.replay.capturable import tiny_kernel_us
from autoprof.analysis.metrics.replay.changes import CudaGraph
from autoprof.analysis.metrics.replay.dense_form import dense_factors
from autoprof.analysis.metrics.stats import Coverage

MASK, SELECTED = 1000, 400


def masked_step(twice: bool = False) -> Trace:
    """The mask made (a 2 us kernel), `x[mask]` (`aten::index` over `aten::nonzero`, whose
    3 us kernel the host waits for), and with `twice` a second index of the same mask; then
    two ops on the selection (100 us and 50 us kernels) and one on other tensors (30 us)."""
    t = (Trace().step(1, 0, 800).region("step_fn", 0, 795)
         .cpu("aten::gt", 2, 10).launch(4, 4, 10, 2))
    starts = (15, 95) if twice else (15,)
    for s in starts:
        t.cpu("aten::index", s, 70).cpu("aten::nonzero", s + 2, 60).launch(s + 4, 4, s + 10, 3)
        t.cpu("cudaStreamSynchronize", s + 10, 40, "cuda_runtime")
        t.cpu("aten::view", s + 64, 2)
    at = starts[-1] + 80
    return (t.cpu("aten::mul", at, 20).launch(at + 5, 5, at + 12, 100)
            .cpu("aten::sum", at + 25, 20).launch(at + 30, 5, at + 120, 50)
            .cpu("aten::add", at + 50, 20).launch(at + 55, 5, at + 180, 30))


def with_dims(t: Trace, after: str, before: str = "") -> pd.DataFrame:
    """The step's events with input shapes: the mask's, the selection's (`after`, on the
    ops computing on it, and on the view inside the index), and `before` on the mask's
    maker beside the mask's own shape."""
    ev = t.frame()
    dims = {"aten::gt": f"[[{MASK}], []{before}]", "aten::index": f"[[{MASK}], []]",
            "aten::nonzero": f"[[{MASK}]]", "aten::view": f"[[{SELECTED}], []]",
            "aten::mul": after, "aten::sum": after, "aten::add": "[[64, 64], [64, 64], []]"}
    ev["input_dims"] = ev["name"].astype(str).map(dims).fillna("")
    return ev


def factors(ev: pd.DataFrame) -> dict[str, float]:
    """Each kernel's factor, by the op whose launch queued it (the whole trace a region)."""
    g = build_graph(ev)
    got = dense_factors(g, Coverage(np.array([-1.0]), np.array([1e9])))
    names = ev["name"].astype(str).to_numpy()
    ops = g.row_parent[g.call_row[g.item_call]]
    return {str(names[op]): float(f) for op, f in zip(ops.tolist(), got.tolist(), strict=True)}


CARRYING = f"[[{SELECTED}], []]"


def test_the_ops_on_the_selection_compute_on_the_whole_mask() -> None:
    got = factors(with_dims(masked_step(), CARRYING))
    assert got["aten::mul"] == pytest.approx(MASK / SELECTED)
    assert got["aten::sum"] == pytest.approx(MASK / SELECTED)
    assert got["aten::add"] == 1.0 and got["aten::gt"] == 1.0


def test_a_second_index_of_the_same_mask_finds_the_same_selection() -> None:
    # the first index's own view carries the selected size: made there, not seen before
    got = factors(with_dims(masked_step(twice=True), CARRYING))
    assert got["aten::mul"] == pytest.approx(MASK / SELECTED)


def test_a_size_the_step_had_before_the_selection_is_not_its_size() -> None:
    got = factors(with_dims(masked_step(), CARRYING, before=f", [{SELECTED}]"))
    assert got["aten::mul"] == 1.0 and got["aten::sum"] == 1.0


def test_the_graph_replays_the_grown_kernels_above_the_shortest_kernels() -> None:
    dense = with_dims(masked_step(), CARRYING)
    plain = with_dims(masked_step(), f"[[{MASK}], []]")  # no op carries a selected size
    tiny = tiny_kernel_us(build_graph(dense))
    grown = sum((d - tiny) * (MASK / SELECTED - 1.0) for d in (100.0, 50.0))
    # the graph's step is GPU-bound: the grown kernels lengthen it by what they grew
    step_dense = replay_step(dense, 1, [CudaGraph("step_fn")]).step_us
    step_plain = replay_step(plain, 1, [CudaGraph("step_fn")]).step_us
    assert step_dense - step_plain == pytest.approx(grown, abs=0.01)
    # with the sync kept (no sync-free form), nothing grows
    assert replay_step(dense, 1, [CudaGraph("step_fn", sync_free=False)]).step_us == \
        pytest.approx(replay_step(plain, 1, [CudaGraph("step_fn", sync_free=False)]).step_us)
