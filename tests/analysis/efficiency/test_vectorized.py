"""The efficiency analysis over whole columns: an op's cost is computed once per distinct
(name, shapes, FLOPs), never once per launching op, and the climb to the op whose cost
counts is the per-row walk's answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.synthetic import write_synthetic_trace

import autoprof.analysis.metrics.efficiency as eff
import autoprof.analysis.metrics.work_costs as work_costs
from autoprof.analysis import load
from autoprof.analysis.metrics.flops import has_rule


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    path = write_synthetic_trace(tmp_path_factory.mktemp("eff") / "t.json", 20_000, seed=11)
    return load(Path(path)).events


def _walk(events: pd.DataFrame, op_row: np.ndarray) -> np.ndarray:
    """The per-row reference: climb while the row is a cpu_op without a FLOPs rule."""
    names = events["name"].astype(str).to_numpy()
    is_op = (events["cat"].astype(str) == "cpu_op").to_numpy()
    parent = events["parent"].to_numpy()
    out = []
    for row in op_row.tolist():
        r = row
        while r >= 0 and is_op[r] and not has_rule(names[r]):
            r = int(parent[r])
        out.append(r if r >= 0 and is_op[r] else -1)
    return np.array(out, dtype=np.int64)


def test_the_climb_is_the_per_row_walk(events: pd.DataFrame) -> None:
    work = events[events["is_gpu_work"].to_numpy(dtype=bool)]
    op_row = work["op_row"].to_numpy()
    # every row of the table as a start too: unruled ops, roots, rows that are no op
    starts = np.concatenate([op_row, np.arange(len(events)), [-1, -5]])
    got = work_costs.cost_rows(events, starts)
    assert (got >= 0).sum() > 1000
    np.testing.assert_array_equal(got, _walk(events, starts))


def test_op_costs_run_once_per_distinct_op(events: pd.DataFrame,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = work_costs.op_costs
    monkeypatch.setattr(work_costs, "op_costs", lambda ops: sizes.append(len(ops)) or real(ops))
    result = eff.efficiency(events, "NVIDIA H200")
    work = events[events["is_gpu_work"].to_numpy(dtype=bool)]
    rows = np.unique(work_costs.cost_rows(events, work["op_row"].to_numpy()))
    ops = events.iloc[rows[rows >= 0]]
    distinct = len(ops[["name", "input_dims", "flops"]].astype(str).drop_duplicates())
    assert len(ops) > 100 * distinct  # many launching ops, few distinct ones
    assert sizes == [distinct]
    assert result.kernels["flops"].notna().any()
