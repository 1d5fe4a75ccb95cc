"""self_vs_total and format_table on the real H200 traces, against torch's own numbers.

``totals.json`` beside each trace holds torch's ``key_averages()`` for that run and
``table.txt`` its printed table. Every CPU op must agree (Self CPU, CPU total, Self CUDA,
CUDA total, calls) within 0.01 us; the only deliberate difference is the
``gpu_user_annotation`` row, which torch lists with GPU time and we do not list at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support.ops_events import row

import autoprof
from autoprof.analysis.metrics.ops import self_vs_total
from autoprof.analysis.report.tables import format_table

H200 = Path(__file__).resolve().parents[2] / "data" / "h200"
CASES = sorted(p.name for p in (H200 / "matmul_add").iterdir() if p.is_dir())
SWEEP = sorted(p.name for p in (H200 / "sweep").iterdir() if (p / "trace.json").exists())
TOL_US = 0.01


@pytest.fixture(scope="module")
def events() -> dict[str, pd.DataFrame]:
    loaded = {c: autoprof.load(H200 / "matmul_add" / c / "trace.json").events for c in CASES}
    loaded.update({f"sweep/{c}": autoprof.load(H200 / "sweep" / c / "trace.json").events
                   for c in SWEEP})
    return loaded


def _annotation_names(events: pd.DataFrame) -> set[str]:
    return set(events.loc[events["cat"] == "gpu_user_annotation", "name"])


@pytest.mark.parametrize("case", CASES)
def test_every_op_agrees_with_torch(events: dict[str, pd.DataFrame], case: str) -> None:
    ev = events[case]
    ops = self_vs_total(ev)
    totals = json.loads((H200 / "matmul_add" / case / "totals.json").read_text())
    spans = _annotation_names(ev)
    checked = 0
    for torch_row in totals["events"]:
        key = torch_row["key"]
        is_span = key in spans and torch_row["cpu_total_us"] == 0
        if is_span:  # torch's gpu_user_annotation row: never ours
            assert key not in set(ops.loc[ops["lane"] == "gpu", "name"])
            continue
        lane = "gpu" if torch_row["cpu_total_us"] == 0 else "cpu"
        ours = row(ops, key, lane)
        assert ours.calls == torch_row["count"], key
        for column in ("self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us"):
            assert ours[column] == pytest.approx(torch_row[column], abs=TOL_US), (key, column)
        checked += 1
    assert checked == len(ops)  # and we have no row torch lacks


@pytest.mark.parametrize(
    ("case", "kernel_us"), [("n64_cold", 8.254), ("n4096_cold", 580.960)]
)
def test_self_device_total_is_kernels_only(
    events: dict[str, pd.DataFrame], case: str, kernel_us: float
) -> None:
    ev = events[case]
    ops = self_vs_total(ev)
    gpu = ops[ops["lane"] == "gpu"]
    assert gpu["self_device_us"].sum() == pytest.approx(kernel_us, abs=TOL_US)
    assert ev.loc[ev["is_gpu_work"], "dur_us"].sum() == pytest.approx(kernel_us, abs=TOL_US)
    # the outermost annotation holds every kernel once; its GPU span is far longer
    assert row(ops, "matmul_add").device_total_us == pytest.approx(kernel_us, abs=TOL_US)
    span_us = ev.loc[ev["cat"] == "gpu_user_annotation", "dur_us"].sum()
    assert span_us > kernel_us


@pytest.mark.parametrize("case", CASES)
def test_table_is_torch_table_without_the_span_row(
    events: dict[str, pd.DataFrame], case: str
) -> None:
    ours = format_table(self_vs_total(events[case]), sort_by="cuda_time_total").splitlines()
    theirs = (H200 / "matmul_add" / case / "table.txt").read_text().splitlines()
    span_rows = [line for line in theirs if line.strip().startswith("matmul_add")
                 and "0.000us         0.00%       0.000us       0.000us" in line]
    assert len(span_rows) == 1
    assert ours == [line for line in theirs if line not in span_rows]


@pytest.mark.parametrize("case", CASES + [f"sweep/{c}" for c in SWEEP])
def test_invariants(events: dict[str, pd.DataFrame], case: str) -> None:
    ev = events[case]
    ops = self_vs_total(ev)
    assert (ops["self_cpu_us"] >= -TOL_US).all()
    assert (ops["self_cpu_us"] <= ops["cpu_total_us"] + TOL_US).all()
    assert (ops["self_device_us"] <= ops["device_total_us"] + TOL_US).all()
    work_us = ev.loc[ev["is_gpu_work"], "dur_us"].sum()
    gpu = ops[ops["lane"] == "gpu"]
    assert gpu["self_device_us"].sum() == pytest.approx(work_us, abs=TOL_US)
    assert gpu["self_device_us"].sum() > 0
    # each kernel is charged once, to the op that launched it; a kernel launched before the
    # profiling window (sweep/n8192's first add) has no launch in the trace and no op
    launched = ev["is_gpu_work"] & (ev["op_row"] >= 0)
    cpu = ops[ops["lane"] == "cpu"]
    assert cpu["self_device_us"].sum() == pytest.approx(
        ev.loc[launched, "dur_us"].sum(), abs=TOL_US
    )
    assert row(ops, "ProfilerStep*").calls == 3
