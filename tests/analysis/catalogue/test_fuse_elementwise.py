"""A source line's chain of memory-bound kernels (diagnose/fuse_elementwise.py): found from
consecutive elementwise and reduction kernels of one line on a large tensor, replayed as one
kernel (metrics/replay/fuse_chain.py); on the H100's hand-written RMSNorm and rotary
program held to the gain measured without the profiler, and never offered on matrix
products or on a compiled run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support.store import committed

from autoprof.analysis.diagnose.fuse_elementwise import (
    MIN_TENSOR_BYTES,
    RMS_HINT,
    elementwise_chains,
    fuse_elementwise,
)

REPO = Path(__file__).resolve().parents[3]
NEXT = REPO / "benchmarks" / "validation" / "data" / "gpu_h100_heldout_next"
QK = "qk_norm_rope_fp32"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, mul>"
REDUCE = "void at::native::reduce_kernel<512, 1, MeanOps>"
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn"
SPLIT_K = "void cublasLt::splitKreduce_kernel<32, 16, int, float>"  # a GEMM's, not ATen's
BIG = json.dumps([[8, 16, 2048, 128], []])  # 134 MB of fp32


def _run_of(name: str) -> Path:
    return next((NEXT / "runs" / name).iterdir())


def _events(kernels: list[tuple[str, str, str]]) -> tuple[pd.DataFrame, pd.Series]:
    """One step of back-to-back kernels, each (kernel name, its op's line, its op's input
    dims), each launched by an op of its own; the events table's columns the chains read,
    and the ops' source lines."""
    rows, lines = [], {}
    for i, (kernel, line, dims) in enumerate(kernels):
        op, k = 2 * i, 2 * i + 1
        rows.append({"label": op, "name": "aten::mul", "cat": "cpu_op", "step": 1, "stream": -1,
                     "ts_us": 100.0 * i, "dur_us": 5.0, "op_row": -1, "input_dims": dims,
                     "input_types": json.dumps(["float", "Scalar"])})
        rows.append({"label": k, "name": kernel, "cat": "kernel", "step": 1, "stream": 7,
                     "ts_us": 100.0 * i + 10, "dur_us": 80.0, "op_row": op, "input_dims": "",
                     "input_types": ""})
        lines[op] = line
    return pd.DataFrame(rows).set_index("label"), pd.Series(lines)


def test_consecutive_memory_bound_kernels_of_one_line_make_one_chain() -> None:
    events, lines = _events([(ELEMENTWISE, "a.py:3", BIG), (REDUCE, "a.py:3", BIG),
                             (ELEMENTWISE, "a.py:3", BIG), (GEMM, "a.py:4", BIG),
                             (ELEMENTWISE, "a.py:5", BIG), (ELEMENTWISE, "a.py:6", BIG)])
    (chain,) = elementwise_chains(events, lines)
    assert chain.labels == (1, 3, 5) and chain.line == "a.py:3"
    assert chain.kernel_us == pytest.approx(240.0) and chain.longest_us == pytest.approx(80.0)


def test_a_chain_on_small_tensors_or_broken_by_a_matrix_product_is_none() -> None:
    small = json.dumps([[64, 64], []])
    assert 64 * 64 * 4 < MIN_TENSOR_BYTES
    events, lines = _events([(ELEMENTWISE, "a.py:3", small), (ELEMENTWISE, "a.py:3", small)])
    assert elementwise_chains(events, lines) == []
    for product in (GEMM, SPLIT_K):
        events, lines = _events([(ELEMENTWISE, "a.py:3", BIG), (product, "a.py:3", BIG),
                                 (ELEMENTWISE, "a.py:3", BIG)])
        assert elementwise_chains(events, lines) == []


@pytest.mark.slow
def test_the_h100_qk_norm_chain_is_offered_within_its_interval_of_the_measured_gain() -> None:
    """The set's truth: the program as written and the same lines with fewer full-size
    passes, each timed without the profiler; the gain is the ratio of their medians."""
    truth = json.loads((NEXT / "truth.json").read_text())["cases"][QK]
    as_written = sorted(r["ms_per_iter"] for r in truth["rounds"]["as_written"])
    fewer = sorted(r["ms_per_iter"] for r in truth["rounds"]["fewer_temporaries"])
    measured = as_written[len(as_written) // 2] / fewer[len(fewer) // 2]
    assert measured == pytest.approx(truth["fixes"]["fewer_temporaries"]["speedup"], rel=0.02)
    opps = committed.run(_run_of(QK)).analysis.opportunities
    (found,) = [o for o in opps if o.get("fix") == "fuse-elementwise"]
    assert found["cause"] == "elementwise_chain"
    band = found["predicted_interval"]
    assert band["low"] <= measured <= band["high"]
    assert "rms_norm" in found["where"][0]["name"] and found["hint"].endswith(RMS_HINT)
    assert "torch.compile" in found["hint"] and found["evidence"]["gpu_busy_pct"] > 90.0


@pytest.mark.slow
def test_a_compiled_run_is_never_offered_the_fusion() -> None:
    """The qk-norm run with a compiled region added is not offered it: the compile fuses."""
    run = committed.run(_run_of(QK)).analysis
    lines = run.source_lines.attribution.rows["source"]
    step_us = float(run.breakdown.steps["step_us"].mean())
    assert fuse_elementwise(run.events, step_us, sources=lambda: lines) is not None
    events = run.events.copy()
    events["name"] = events["name"].astype(str)
    events.loc[events.index[0], "name"] = "Torch-Compiled Region: 0/0"
    assert fuse_elementwise(events, step_us, sources=lambda: lines) is None


@pytest.mark.slow
@pytest.mark.parametrize("run", [
    "tests/data/gpu_h100_seed/seed4096",  # matrix products, compute-bound
    "tests/data/gpu_h100_seed/seed64",  # small matrix products, launch-bound
    "tests/data/gpu_h200_lines/runs/on/compiled",  # torch.compile'd
    "tests/data/gpu_h100_catalogue/runs/fp32_matmul",  # fp32 products on CUDA cores
])
def test_runs_without_such_chains_are_not_offered_it(run: str) -> None:
    for path in sorted(p.parent for p in (REPO / run).glob("**/manifest.json"))[:2]:
        analysis = committed.run(path).analysis
        assert analysis.source_lines.available  # the lines are there: the chains are not
        assert not [o for o in analysis.opportunities if o.get("fix") == "fuse-elementwise"]
