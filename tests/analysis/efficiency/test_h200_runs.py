"""autoprof's efficiency figures on runs recorded on an H200 (benchmarks/gpu/record_cases.py),
against FLOPs, bytes and CUDA-event times the same script measured without the profiler.

CUDA events around one call include the wait between the event and the first kernel's
start: when the host's launch cost is a large share of a call (host_us / event_us), the
kernels' own TFLOP/s is higher than FLOPs / event time. The 5% agreement is asserted where
that share is small (the GPU is saturated); elsewhere autoprof must read higher, never lower.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.store import committed

import autoprof.analysis as analysis
from autoprof.analysis.metrics.flops import is_matrix_op

ROOT = Path(__file__).resolve().parents[2] / "data" / "gpu_h200"
RECORDED = json.loads((ROOT / "recorded.json").read_text())["cases"]
EFF = sorted(c for c in RECORDED if c.startswith("eff_"))
SATURATED = 0.15  # host launch time / CUDA-event time under which the 5% bound applies
TOLERANCE = 0.05
# bf16 8192: every profiled kernel ran 1.47 ms against 1.41 ms per untraced call (CUDA
# events), so the trace itself is 4.4% slower; autoprof reads it exactly (see docs).
TRACE_SLOWER = {"eff_gemm_bf16_8192": 0.055}


def _run(case: str) -> analysis.Run:
    return committed.run(ROOT / RECORDED[case]["run"])


@pytest.fixture(scope="module", params=EFF)
def case(request: pytest.FixtureRequest) -> tuple[str, dict, analysis.Run]:
    return request.param, RECORDED[request.param], _run(request.param)


def test_recordings_are_there() -> None:
    assert len(EFF) == 11 and all(RECORDED[c]["status"] == "complete" for c in EFF)


def test_flops_per_step_match_the_script(case: tuple[str, dict, analysis.Run]) -> None:
    _, rec, run = case
    steps = run.analysis.efficiency.steps
    assert len(steps) == 3
    # the script counts the matrix work (and the elementwise chain's one op per element);
    # autoprof also counts a conv net's bias adds and relus: one FLOP an element, < 0.5%
    assert steps["flops"].median() == pytest.approx(rec["info"]["flops"], rel=0.005)


def test_tflops_agree_with_cuda_events(case: tuple[str, dict, analysis.Run]) -> None:
    name, rec, run = case
    truth = rec["info"]["flops"] / (rec["truth"]["event_us_median"] * 1e-6) / 1e12
    measured = float(run.analysis.efficiency.steps["gpu_span_tflops"].median())
    if rec["truth"]["host_us_median"] / rec["truth"]["event_us_median"] < SATURATED:
        assert measured == pytest.approx(truth, rel=TRACE_SLOWER.get(name, TOLERANCE))
    else:
        assert measured > truth


def test_bytes_and_bandwidth(case: tuple[str, dict, analysis.Run]) -> None:
    name, rec, run = case
    if "bytes" not in rec["info"]:
        pytest.skip("the script measured no bytes for this case")
    eff = run.analysis.efficiency
    costed = eff.kernels.dropna(subset=["bytes"])
    assert costed["bytes"].sum() / len(eff.steps) == pytest.approx(rec["info"]["bytes"],
                                                                   rel=0.01)
    if name == "eff_elementwise":  # bandwidth-bound: GB/s is what matters
        seconds = (costed["bytes"] / (costed["gbps"] * 1e9)).sum()
        gbps = costed["bytes"].sum() / seconds / 1e9
        assert gbps == pytest.approx(rec["truth"]["gbps"], rel=TOLERANCE)
        assert 80 < 100 * gbps / 4800 < 100


def test_bound_is_right(case: tuple[str, dict, analysis.Run]) -> None:
    name, _, run = case
    ops = run.analysis.efficiency.ops
    matrix = ops[[is_matrix_op(n) for n in ops["name"]]]
    rest = ops[[not is_matrix_op(n) and b is not None for n, b in zip(ops["name"], ops["bound"],
                                                                      strict=True)]]
    if name == "eff_elementwise":
        assert matrix.empty and set(rest["bound"]) == {"memory"}
    else:
        assert not matrix.empty and set(matrix["bound"]) == {"compute"}
        assert set(rest["bound"]) <= {"memory"}


@pytest.mark.slow
def test_low_efficiency_flags_fp32_gemms_only() -> None:
    for name in EFF:
        if not name.startswith("eff_gemm"):
            continue
        ids = {d.id for d in _run(name).diagnostics()}
        verdict = _run(name).verdict().kind
        expect = "_fp32_" in name and verdict != "overhead-bound"
        assert ("low-efficiency" in ids) == expect, (name, verdict, ids)


def test_conv_net_is_flagged_for_its_layout_transposes() -> None:
    found = [d for d in _run("eff_conv").diagnostics() if d.id == "low-efficiency"]
    assert len(found) == 1
    op = found[0].evidence["ops"][0]
    assert op["op"] == "aten::cudnn_convolution" and op["pct_of_roofline"] < 50
    assert any("layout transposes" in r for r in op["reasons"])
    assert "channels_last" in found[0].hint
