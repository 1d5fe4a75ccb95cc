"""The real H200 traces: the facts tests/data/h200/README.md lists, and the sweep's crossover."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.store import committed

from autoprof.analysis import compare
from autoprof.analysis.analysis import diagnose

H200 = Path(__file__).resolve().parents[2] / "data" / "h200"
MATMUL = H200 / "matmul_add"
SWEEP = H200 / "sweep"
ORDER = {"overhead-bound": 0, "mixed": 1, "compute-bound": 2}


@pytest.fixture(scope="module")
def runs():
    return {p.name: committed.run(p / "trace.json") for p in sorted(MATMUL.iterdir())}


@pytest.mark.parametrize("case", ["n64_cold", "n64_prewarm"])
def test_64_is_overhead_bound_with_8us_of_kernels(runs, case):
    run = runs[case]
    ov = run.overhead()
    assert run.verdict().kind == "overhead-bound"
    assert ov.self_gpu_us == pytest.approx(8.3, abs=0.2)  # README: about 8.3 us, 6 kernels
    assert ov.kernels == 6
    assert 1.5 <= ov.gpu_busy_pct <= 2.5  # README: about 2%
    assert ov.cpu_gpu_ratio > 40
    found = {d.id for d in run.diagnostics()}
    assert {"overhead-bound", "short-kernels"} <= found
    assert "launch-latency" not in found  # kernels start ~2 us after their launch


def test_64_self_cpu_matches_torch_table(runs):
    totals = json.loads((MATMUL / "n64_cold" / "totals.json").read_text())
    assert runs["n64_cold"].overhead().self_cpu_us == pytest.approx(totals["self_cpu_us"],
                                                                    rel=1e-6)


@pytest.mark.parametrize("case", ["n4096_cold", "n4096_prewarm"])
def test_4096_is_compute_bound_with_581us_of_kernels(runs, case):
    run = runs[case]
    ov = run.overhead()
    assert run.verdict().kind == "compute-bound"
    assert ov.self_gpu_us == pytest.approx(581.0, abs=3.0)  # README: about 581 us
    assert 76.0 <= ov.gpu_busy_pct <= 82.0  # README: about 79%
    assert ov.launch_queued_pct > 50  # the host runs ahead: kernels queue behind earlier ones
    found = {d.id: d for d in run.diagnostics()}
    assert "overhead-bound" not in found and "short-kernels" not in found
    assert found["launch-latency"].severity == "info"


@pytest.mark.parametrize("case", ["n64_cold", "n64_prewarm", "n4096_cold", "n4096_prewarm"])
def test_first_step_is_slow_and_every_kernel_is_linked(runs, case):
    run = runs[case]
    steps = run.steps()
    assert list(steps["step"]) == [2, 3, 4]
    first, later = steps["cpu_span_us"].iloc[0], steps["cpu_span_us"].iloc[1:]
    assert 195 <= first <= 235  # README: about 210 us
    assert first >= 1.9 * later.median()  # 2.0x (4096 pre-warmed) to 3.4x
    assert later.max() <= 1.4 * later.min()  # the later steps agree with each other
    cold = {d.id: d for d in diagnose(run)}["cold-start"]
    assert cold.severity == "warning" and cold.evidence["step_ratio"] >= 1.9
    work = run.events[run.events["is_gpu_work"]]
    assert (work["launch_row"] >= 0).all()  # README: every kernel linked to its launch
    assert run.overhead().launch_latency_us_p50 is not None


def _ground_truth_crossover() -> int:
    """First size where a call plus sync takes clearly longer (1.5x) than launching it, i.e.
    the GPU rather than the host sets the pace (measured without the profiler)."""
    truth = json.loads((SWEEP / "ground_truth.json").read_text())
    for row in sorted(truth, key=lambda r: r["size"]):
        assert 19.0 <= row["enqueue_us"] <= 34.0  # host launch cost ~20-33 us at every size
        if row["wall_sync_us_median"] >= 1.5 * row["enqueue_us"]:
            return int(row["size"])
    raise AssertionError("no crossover in ground_truth.json")


def test_sweep_verdicts_cross_over_where_ground_truth_does():
    dirs = sorted(SWEEP.glob("n*"), key=lambda p: int(p.name[1:]))
    table = compare([committed.run(d / "trace.json") for d in dirs])
    assert list(table["size"]) == [int(d.name[1:]) for d in dirs]  # from the folder names
    crossover = _ground_truth_crossover()
    assert 1024 < crossover <= 2048  # README: between 1024 and 2048
    kinds = list(table["verdict"])
    assert [ORDER[k] for k in kinds] == sorted(ORDER[k] for k in kinds)  # monotone
    for size, kind in zip(table["size"], kinds, strict=True):
        if size < crossover:
            assert kind == "overhead-bound", (size, kind)
        else:
            assert kind != "overhead-bound", (size, kind)
    assert dict(zip(table["size"], kinds, strict=True))[4096] == "compute-bound"
    assert dict(zip(table["size"], kinds, strict=True))[8192] == "compute-bound"
    # the chart the viewer draws: GPU time per step passes CPU span per step above crossover
    big = table[table["size"] >= 4096]
    assert (big["step_gpu_work_us_median"] > big["step_cpu_span_us_median"]).all()
    small = table[table["size"] < crossover]
    assert (small["step_gpu_work_us_median"] < small["step_cpu_span_us_median"]).all()


def test_work_queued_before_tracing_does_not_count_as_idle():
    run = committed.run(SWEEP / "n8192" / "trace.json")
    work = run.events[run.events["is_gpu_work"]]
    assert (work["launch_row"] < 0).sum() == 1  # one kernel launched before the trace began
    steps = run.steps()
    assert (steps["gpu_idle_us"] < 50).all()
    assert run.verdict().kind == "compute-bound"
