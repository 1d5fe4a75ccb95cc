"""Training steps (forward + backward) recorded on an H200 by
benchmarks/gpu/efficiency_training.py, against the script's model FLOPs and CUDA events.
The recordings live in tests/data/gpu_h200_training/ (the script's whole --out folder:
recorded.json and runs/); until they are committed these tests skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoprof.analysis as analysis

ROOT = Path(__file__).resolve().parents[2] / "data" / "gpu_h200_training"
RECORDED = (json.loads((ROOT / "recorded.json").read_text())["cases"]
            if (ROOT / "recorded.json").is_file() else {})
pytestmark = pytest.mark.skipif(not RECORDED, reason=f"no recordings under {ROOT} yet")
SATURATED = 0.15  # host launch time / CUDA-event time under which the 5% bound applies


@pytest.fixture(scope="module", params=sorted(RECORDED) or ["none"])
def case(request: pytest.FixtureRequest) -> tuple[str, dict, analysis.Run]:
    rec = RECORDED[request.param]
    run = ROOT / rec["run"]  # "runs/<case>/<run_id>", or "<case>/<run_id>" once flattened
    if not run.exists() and rec["run"].startswith("runs/"):
        run = ROOT / rec["run"][len("runs/"):]
    return request.param, rec, analysis.load(run)


def test_model_flops_per_step_include_the_backward(case) -> None:
    _, rec, run = case
    steps = run.analysis.efficiency.steps
    assert len(steps) == 3
    # elementwise ops (relu, its backward, bias gradients) add one FLOP an element: < 1%
    assert steps["flops"].median() == pytest.approx(rec["info"]["flops"], rel=0.01)


def test_tflops_and_mfu_agree_with_cuda_events(case) -> None:
    _, rec, run = case
    eff = run.analysis.efficiency
    truth = rec["info"]["flops"] / (rec["truth"]["event_us_median"] * 1e-6) / 1e12
    measured = float(eff.steps["gpu_span_tflops"].median())
    if rec["truth"]["host_us_median"] / rec["truth"]["event_us_median"] < SATURATED:
        assert measured == pytest.approx(truth, rel=0.05)
    else:
        # near host-bound untraced (the conv step: host 77% of its GPU time), the profiler's
        # own host cost opens idle gaps inside the GPU span, so the span rate reads lower;
        # the kernels themselves still ran at least as fast as the untraced end-to-end rate
        assert measured == pytest.approx(truth, rel=0.15)
        busy = run.breakdown()[["gpu_compute_us", "gpu_memory_us"]].sum(axis=1)
        assert float((steps_flops(run) / busy).median()) / 1e6 >= truth
    assert eff.dtype == "bf16"
    assert eff.mfu_pct == pytest.approx(100 * eff.step_tflops / 989.5)


def steps_flops(run):
    return run.analysis.efficiency.steps["flops"].to_numpy()


def test_matrix_ops_are_compute_bound(case) -> None:
    _, _, run = case
    ops = run.analysis.efficiency.ops.set_index("name")
    for name in ("aten::addmm", "aten::mm", "aten::convolution_backward"):
        if name in ops.index:
            assert ops.loc[name, "bound"] == "compute", name
