"""The bias-add rule (metrics/replay/bias.py) read from the events table equals the rule read
op by op from the replay's graph: on recorded H200 runs (every rank) and on small tables of a
bias add right after its product, or not (another op between, another thread, another rank,
a product that folds its bias already); times in microseconds."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.attrbuild import Trace

import autoprof
from autoprof.analysis.metrics.replay import build_graph
from autoprof.analysis.metrics.replay.bias import bias_add_pairs, bias_adds, op_positions
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.stats import ranks_of

DATA = Path(__file__).resolve().parents[2] / "data"
RECORDED = ["gpu_h200_truth", "gpu_h200_x2", "gpu_h200_rerun/matmul_add"]
_DIMS = re.compile(r"\[([\d, ]*)\]")
PRODUCT = "[[64, 32], [32, 16]]"
BIAS = "[[64, 16], [16], []]"


def _shapes(dims: str) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in m.split(",") if v.strip()) for m in _DIMS.findall(dims)]


def op_by_op(g: Graph) -> list[int]:
    """The rule walked one op at a time in start order: each op's predecessor is the last op
    seen on its (thread, parent)."""
    ev = g.events
    names = ev["name"].astype(str).to_numpy()
    dims = ev["input_dims"].astype(str).to_numpy() if "input_dims" in ev else \
        np.full(len(ev), "", dtype=object)
    ts_us = ev["ts_us"].to_numpy(float)
    ops = np.flatnonzero((ev["cat"].astype(str) == "cpu_op").to_numpy())
    out = []
    last: dict[tuple[int, int], int] = {}
    for r in ops[np.argsort(ts_us[ops], kind="stable")].tolist():
        key = (int(g.row_thread[r]), int(g.row_parent[r]))
        before = last.get(key, -1)
        last[key] = r
        if names[r] != "aten::add" or before < 0 or \
                names[before] not in ("aten::matmul", "aten::mm"):
            continue
        a, b = (_shapes(dims[before]) + [(), ()])[:2]
        x, y = (_shapes(dims[r]) + [(), ()])[:2]
        if len(a) == 2 and len(b) == 2 and x == (a[0], b[1]) and y in ((b[1],), (1, b[1])):
            out.append(r)
    return out


def assert_same_rule(events: pd.DataFrame) -> int:
    """Both readings agree on every rank; the number of bias adds found."""
    found = 0
    for rank in ranks_of(events):
        g = build_graph(events, rank)
        want = op_by_op(g)
        ops = op_positions(g.events)
        assert bias_add_pairs(g.events, ops, g.row_thread[ops], g.row_parent[ops])[0].tolist() \
            == want
        labels = g.events["label"].to_numpy()[want]
        assert bias_adds(events, rank).tolist() == labels.tolist()
        if rank == ranks_of(events)[0]:
            assert bias_adds(events).tolist() == labels.tolist()
        found += len(want)
    return found


def _recorded_runs() -> list[Path]:
    return sorted(p.parent for d in RECORDED for p in (DATA / d).rglob("manifest.json"))


@pytest.mark.slow
@pytest.mark.parametrize("folder", _recorded_runs(), ids=lambda p: p.name)
def test_recorded_runs_give_the_same_adds(folder: Path) -> None:
    assert_same_rule(autoprof.load(folder).events)


@pytest.mark.slow
def test_the_seed_run_has_bias_adds_to_find() -> None:
    """seed_4096 is `x @ w + b`: the comparison above is not only over empty answers."""
    folder = next((DATA / "gpu_h200_truth" / "runs" / "seed_4096").rglob("manifest.json")).parent
    assert assert_same_rule(autoprof.load(folder).events) > 0


def with_dims(t: Trace, dims: list[str]) -> pd.DataFrame:
    """The table of `t`, each op row given the next of `dims` in trace order."""
    ev = t.frame()
    ops = (ev["cat"].astype(str) == "cpu_op").to_numpy()
    ev["input_dims"] = ""
    ev.loc[ops, "input_dims"] = dims
    return ev


def product_then(t: Trace, first: str, then: str, ts: float = 2, tid: int = 1,
                 rank: int = 0, then_tid: int | None = None) -> Trace:
    """`first` (a product) at `ts`, `then` 30 us later, each launching its kernel."""
    t.cpu(first, ts, 20, tid=tid, rank=rank).launch(ts + 5, 5, ts + 12, 10, tid=tid, rank=rank)
    other = tid if then_tid is None else then_tid
    return t.cpu(then, ts + 30, 10, tid=other, rank=rank).launch(ts + 32, 4, ts + 40, 5,
                                                                 tid=other, rank=rank)


def _names(ev: pd.DataFrame) -> list[str]:
    return [str(n) for n in ev.loc[bias_adds(ev), "name"]]


@pytest.mark.parametrize("product", ["aten::mm", "aten::matmul"])
def test_an_add_of_a_bias_right_after_its_product_is_found(product: str) -> None:
    t = product_then(Trace().step(1, 0, 100), product, "aten::add")
    ev = with_dims(t, [PRODUCT, BIAS])
    assert _names(ev) == ["aten::add"] and assert_same_rule(ev) == 1
    row_bias = with_dims(product_then(Trace().step(1, 0, 100), product, "aten::add"),
                         [PRODUCT, "[[64, 16], [1, 16], []]"])
    assert assert_same_rule(row_bias) == 1


def test_a_product_that_adds_its_bias_already_is_not_followed_by_one() -> None:
    ev = with_dims(product_then(Trace().step(1, 0, 100), "aten::addmm", "aten::add"),
                   ["[[16], [64, 32], [32, 16]]", BIAS])
    assert _names(ev) == [] and assert_same_rule(ev) == 0


def test_an_add_that_is_not_a_bias_is_not_found() -> None:
    for dims in ("[[64, 16], [64, 16], []]", "[[16, 64], [16], []]", ""):
        ev = with_dims(product_then(Trace().step(1, 0, 100), "aten::mm", "aten::add"),
                       [PRODUCT, dims])
        assert assert_same_rule(ev) == 0


def test_an_op_between_the_product_and_the_add_breaks_the_pair() -> None:
    t = Trace().step(1, 0, 100).cpu("aten::mm", 2, 20).cpu("aten::relu", 24, 4) \
        .cpu("aten::add", 30, 10)
    ev = with_dims(t, [PRODUCT, "[[64, 16]]", BIAS])
    assert assert_same_rule(ev) == 0


def test_an_add_on_another_thread_is_not_the_products() -> None:
    t = product_then(Trace().step(1, 0, 100), "aten::mm", "aten::add", then_tid=2)
    ev = with_dims(t, [PRODUCT, BIAS])
    assert _names(ev) == [] and assert_same_rule(ev) == 0
    both = Trace().step(1, 0, 100).cpu("aten::mm", 2, 20, tid=1).cpu("aten::mm", 3, 20, tid=2) \
        .cpu("aten::add", 30, 5, tid=2).cpu("aten::add", 31, 5, tid=1)
    ev = with_dims(both, [PRODUCT, PRODUCT, BIAS, BIAS])
    assert assert_same_rule(ev) == 2


def test_each_rank_is_read_on_its_own() -> None:
    t = Trace().step(1, 0, 100, rank=0).step(1, 0, 100, rank=1)
    t = product_then(t, "aten::mm", "aten::relu", rank=0)
    t = product_then(t, "aten::mm", "aten::add", rank=1)
    ev = with_dims(t, [PRODUCT, "[[64, 16]]", PRODUCT, BIAS])
    assert bias_adds(ev).tolist() == []  # the first rank, the one the replay reads
    assert ev.loc[bias_adds(ev, 1), "name"].astype(str).tolist() == ["aten::add"]
    assert assert_same_rule(ev) == 1


def test_adds_come_in_start_order_under_nested_parents() -> None:
    """Two layers, each a product then its add under its own region, the later layer first
    in the table: the answer is by start, as the op-by-op walk gives it."""
    t = Trace().step(1, 0, 200).region("layer2", 100, 50).cpu("aten::mm", 102, 20) \
        .cpu("aten::add", 130, 10).region("layer1", 10, 50).cpu("aten::mm", 12, 20) \
        .cpu("aten::add", 40, 10)
    ev = with_dims(t, [PRODUCT, BIAS, PRODUCT, BIAS])
    assert assert_same_rule(ev) == 2
    starts = ev.loc[bias_adds(ev), "ts_us"].tolist()
    assert starts == sorted(starts)
