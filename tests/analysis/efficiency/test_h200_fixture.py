"""The seed on a real H200 (torch.profiler, bf16 4096): autoprof's GEMM TFLOP/s and add GB/s
agree with 2*M*N*K / duration and bytes / duration worked out here from the raw trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoprof.analysis as analysis

TRACE = Path(__file__).resolve().parents[2] / "data/h200/matmul_add/n4096_prewarm/trace.json"
ELEMENT_BYTES = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4}


def _raw() -> list[dict]:
    return json.loads(TRACE.read_text())["traceEvents"]


def _kernels_of(op_name: str) -> list[tuple[dict, dict]]:
    """(op, kernel) pairs tied by External id, straight from the JSON."""
    events = _raw()
    ops = {e["args"]["External id"]: e for e in events
           if e.get("cat") == "cpu_op" and e["name"] == op_name}
    return [(ops[e["args"]["External id"]], e) for e in events
            if e.get("cat") == "kernel" and e.get("args", {}).get("External id") in ops]


@pytest.fixture(scope="module")
def kernels() -> dict:
    return analysis.load(TRACE).efficiency().set_index("name").to_dict(orient="index")


def test_gemm_tflops_is_2mnk_over_the_kernel_time(kernels: dict) -> None:
    pairs = _kernels_of("aten::mm")
    assert len(pairs) == 3
    flops = 0
    for op, _ in pairs:
        (m, k), (k2, n) = op["args"]["Input Dims"][:2]
        assert k == k2
        flops += 2 * m * n * k
    dur_us = sum(kern["dur"] for _, kern in pairs)
    gemm = kernels[pairs[0][1]["name"]]
    assert gemm["tflops"] == pytest.approx(flops / (dur_us * 1e-6) / 1e12, rel=1e-9)
    assert 700 < gemm["tflops"] < 900  # the "about 800 TFLOP/s, ~80% of peak"
    assert gemm["pct_of_peak_flops"] == pytest.approx(100 * gemm["tflops"] / 989.5)
    assert gemm["bound"] == "compute"


def test_add_gbps_is_bytes_moved_over_the_kernel_time(kernels: dict) -> None:
    pairs = _kernels_of("aten::add")
    assert len(pairs) == 3
    moved = 0
    for op, _ in pairs:
        dims, types = op["args"]["Input Dims"], op["args"]["Input type"]
        tensors = [(d, t) for d, t in zip(dims, types, strict=False) if d and t in ELEMENT_BYTES]
        read = sum(d[0] * d[1] * ELEMENT_BYTES[t] for d, t in tensors)
        moved += read + read // len(tensors)  # the output: same shape and dtype as an input
    dur_us = sum(kern["dur"] for _, kern in pairs)
    add = kernels[pairs[0][1]["name"]]
    assert add["gbps"] == pytest.approx(moved / (dur_us * 1e-6) / 1e9, rel=1e-9)
    assert 4000 < add["gbps"] < 4800  # "about 100 MB at ~4.5 TB/s, near the HBM limit"
    assert add["bound"] == "memory"
