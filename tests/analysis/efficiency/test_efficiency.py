"""The roofline view on small traces written here: each rule of metrics/efficiency.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.efficiency_trace import BF16, FP32, TraceBuilder, add, mm

import autoprof.analysis as analysis
from autoprof.analysis.analysis import Analysis
from autoprof.analysis.metrics.efficiency import NO_SHAPES
from autoprof.analysis.metrics.roofline import roof_lines

H200_BF16, H200_FP32, H200_GBPS = 989.5, 67.0, 4800.0
ENV_TFLOPS, ENV_GBPS = "AUTOPROF_PEAK_TFLOPS", "AUTOPROF_PEAK_GBPS"


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_TFLOPS, raising=False)
    monkeypatch.delenv(ENV_GBPS, raising=False)


def _run(tmp_path: Path, builder: TraceBuilder) -> analysis.Run:
    return analysis.load(builder.write(tmp_path / "trace.json"))


def _gemm_add_steps(n: int = 4096, steps: int = 3, device: str | None = "NVIDIA H200"
                    ) -> TraceBuilder:
    b = TraceBuilder(device)
    for _ in range(steps):
        b.step_with((*mm(n), [("memset", 1.0), ("gemm_kernel", 200.0)]),
                    (*add(n), [("add_kernel", 25.0)]), cpu_us=50.0)
    return b


def test_loader_keeps_input_types_as_text(tmp_path: Path) -> None:
    run = _run(tmp_path, _gemm_add_steps(64, steps=1))
    ev = run.events
    assert ev["input_types"].dtype == "category"
    mm_row = ev[ev["name"] == "aten::mm"].iloc[0]
    assert mm_row["input_types"] == '["c10::BFloat16", "c10::BFloat16"]'
    assert set(ev.loc[ev["cat"] == "kernel", "input_types"]) == {""}


def test_gemm_and_add_rates_from_shapes_and_durations(tmp_path: Path) -> None:
    n = 4096
    eff = _run(tmp_path, _gemm_add_steps(n)).analysis.efficiency
    k = eff.kernels.set_index("name")
    gemm, addk = k.loc["gemm_kernel"], k.loc["add_kernel"]
    assert gemm["calls"] == 3 and gemm["gpu_us"] == pytest.approx(600.0)
    assert gemm["flops"] == pytest.approx(3 * 2 * n**3)
    assert gemm["tflops"] == pytest.approx(2 * n**3 / 200e-6 / 1e12)
    assert gemm["pct_of_peak_flops"] == pytest.approx(100 * gemm["tflops"] / H200_BF16)
    assert gemm["intensity"] == pytest.approx(2 * n**3 / (3 * n * n * 2))
    assert gemm["bound"] == "compute" and gemm["dtype"] == "bf16"
    assert addk["gbps"] == pytest.approx(3 * n * n * 2 / 25e-6 / 1e9)
    assert addk["pct_of_peak_bw"] == pytest.approx(100 * addk["gbps"] / H200_GBPS)
    assert addk["bound"] == "memory"
    # the mm's memset is GPU work of the op but does none of its FLOPs
    memset = k.loc["Memset (Device)"]
    assert math.isnan(memset["flops"]) and memset["bound"] is None
    assert list(eff.kernels["name"]) == ["gemm_kernel", "add_kernel", "Memset (Device)"]


def test_steps_mfu_uses_the_longer_of_cpu_and_gpu_span(tmp_path: Path) -> None:
    n = 4096
    eff = _run(tmp_path, _gemm_add_steps(n)).analysis.efficiency
    step_flops = 2 * n**3 + n * n
    assert len(eff.steps) == 3
    for _, s in eff.steps.iterrows():
        assert s["flops"] == pytest.approx(step_flops)
        assert s["step_us"] >= s["gpu_span_us"] >= 226.0  # memset + gemm + add, back to back
        assert s["tflops"] == pytest.approx(step_flops / (s["step_us"] * 1e-6) / 1e12)
    assert eff.dtype == "bf16"
    assert eff.mfu_pct == pytest.approx(100 * eff.step_tflops / H200_BF16)


def test_several_kernels_of_one_op_share_its_flops_by_duration(tmp_path: Path) -> None:
    b = TraceBuilder()
    conv = ("aten::cudnn_convolution", [[8, 64, 32, 32], [64, 64, 3, 3], [], []],
            [BF16, BF16, "ScalarList", "ScalarList"])
    b.step_with((*conv, [("nchwToNhwc", 10.0), ("fprop_gemm", 30.0)]))
    eff = _run(tmp_path, b).analysis.efficiency
    k = eff.kernels.set_index("name")
    flops = 2 * 8 * 64 * 32 * 32 * 64 * 9
    assert k.loc["fprop_gemm", "flops"] == pytest.approx(0.75 * flops)
    assert k.loc["nchwToNhwc", "flops"] == pytest.approx(0.25 * flops)
    assert k.loc["fprop_gemm", "tflops"] == pytest.approx(k.loc["nchwToNhwc", "tflops"])
    assert bool(k.loc["fprop_gemm", "shared"])
    assert any("share" in note for note in eff.notes)
    op = eff.ops.set_index("name").loc["aten::cudnn_convolution"]
    assert op["flops"] == pytest.approx(flops) and op["calls"] == 2


def test_tf32_kernel_is_measured_against_the_tf32_roof(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step_with((*mm(2048, FP32), [("sm90_xmma_gemm_f32f32_tf32f32_f32_nn", 50.0)]))
    b.step_with((*mm(2048, FP32), [("sm80_xmma_gemm_f32f32_f32f32_f32_nn_ffma", 400.0)]))
    k = _run(tmp_path, b).analysis.efficiency.kernels.set_index("dtype")
    assert k.loc["tf32", "pct_of_peak_flops"] == pytest.approx(
        100 * 2 * 2048**3 / 50e-6 / 1e12 / 494.5)
    assert k.loc["fp32", "pct_of_peak_flops"] == pytest.approx(
        100 * 2 * 2048**3 / 400e-6 / 1e12 / H200_FP32)


def test_unknown_device_keeps_absolute_figures_and_nulls_the_shares(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(tmp_path, _gemm_add_steps(1024, device="NVIDIA B300"))
    eff = run.analysis.efficiency
    gemm = eff.kernels.iloc[0]
    assert gemm["tflops"] > 0 and math.isnan(gemm["pct_of_peak_flops"])
    assert gemm["bound"] is None and eff.mfu_pct is None and eff.step_tflops is not None
    assert any("AUTOPROF_PEAK_TFLOPS" in note for note in eff.notes)
    monkeypatch.setenv(ENV_TFLOPS, "2000")
    monkeypatch.setenv(ENV_GBPS, "8000")
    told = Analysis(run.data).efficiency  # options from the environment, read at the edge
    assert told.kernels.iloc[0]["pct_of_peak_flops"] == pytest.approx(
        100 * gemm["tflops"] / 2000)
    assert told.mfu_pct == pytest.approx(100 * told.step_tflops / 2000)


def test_no_shapes_says_why_and_reports_null(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step_with(("aten::mm", None, [], [("gemm_kernel", 100.0), ("gemm_kernel", 50.0)]))
    eff = _run(tmp_path, b).analysis.efficiency
    assert NO_SHAPES in eff.notes
    assert not any("share" in note for note in eff.notes)  # nothing to share without a cost
    assert math.isnan(eff.kernels.iloc[0]["tflops"])
    assert eff.step_tflops is None and eff.mfu_pct is None
    assert eff.kernels.iloc[0]["gpu_us"] == 150.0


def test_cpu_only_trace_has_an_empty_table(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                     "ts": 1.0, "dur": 5.0,
                     "args": {"Input Dims": [[2, 2], [2, 2]], "Input type": ["float", "float"]}})
    run = _run(tmp_path, b)
    eff = run.analysis.efficiency
    assert eff.kernels.empty and eff.steps.empty and eff.device is None
    assert run.efficiency().empty
    assert "no GPU work in this trace" in eff.notes


def test_roof_lines_per_dtype_and_the_summary_cut(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step_with((*mm(1024), [("bf16_gemm", 10.0)]), (*mm(1024, FP32), [("fp32_gemm", 80.0)]))
    eff = _run(tmp_path, b).analysis.efficiency
    roofs = roof_lines(eff)
    assert set(roofs["roof"]) == {"bf16", "fp32"}
    top = roofs.groupby("roof")["tflops"].max()
    assert top["bf16"] == pytest.approx(H200_BF16) and top["fp32"] == pytest.approx(H200_FP32)
    slope = roofs[roofs["tflops"] < roofs["roof"].map(top)]
    assert len(slope) > 0
    assert list(slope["tflops"]) == pytest.approx(list(slope["intensity"] * H200_GBPS / 1e3))
    cut = eff.to_dict(top=1)
    assert [k["name"] for k in cut["kernels"]] == ["fp32_gemm"] and cut["kernels_total"] == 2


def _copies(n: int = 1024) -> TraceBuilder:
    """A mm with a memset of its own byte count, a host-to-device and a device-to-device
    copy, each with Kineto's args.bytes."""
    b = TraceBuilder()
    b.step_with((*mm(n), [("memset", 1.0, 4096), ("gemm_kernel", 20.0)]),
                ("aten::copy_", None, [], [("Memcpy HtoD (Pinned -> Device)", 100.0, 2e6)]),
                ("aten::copy_", None, [], [("Memcpy DtoD (Device -> Device)", 10.0, 24e6)]),
                ("aten::copy_", None, [], [("Memcpy PtoP (Device -> Device)", 40.0, 8e6)]))
    return b


def test_loader_keeps_the_bytes_of_memcpys_and_memsets(tmp_path: Path) -> None:
    ev = _run(tmp_path, _copies()).events
    assert ev["bytes"].dtype == "float64"
    by_name = ev.dropna(subset=["bytes"]).set_index("name")["bytes"].to_dict()
    assert by_name == {"Memset (Device)": 4096.0, "Memcpy HtoD (Pinned -> Device)": 2e6,
                       "Memcpy DtoD (Device -> Device)": 24e6,
                       "Memcpy PtoP (Device -> Device)": 8e6}
    assert ev.loc[ev["name"] == "gemm_kernel", "bytes"].isna().all()


def test_memcpys_and_memsets_are_rated_from_their_own_bytes(tmp_path: Path) -> None:
    n = 1024
    eff = _run(tmp_path, _copies(n)).analysis.efficiency
    k = eff.kernels.set_index("name")
    dtod = k.loc["Memcpy DtoD (Device -> Device)"]
    assert dtod["bytes"] == pytest.approx(2 * 24e6)  # read and written
    assert dtod["gbps"] == pytest.approx(2 * 24e6 / 10e-6 / 1e9)
    assert dtod["pct_of_peak_bw"] == pytest.approx(100 * dtod["gbps"] / H200_GBPS)
    assert dtod["bound"] == "memory" and dtod["pct_of_roofline"] == dtod["pct_of_peak_bw"]
    memset = k.loc["Memset (Device)"]
    assert memset["bytes"] == 4096 and memset["bound"] == "memory"
    htod = k.loc["Memcpy HtoD (Pinned -> Device)"]
    assert htod["gbps"] == pytest.approx(2e6 / 100e-6 / 1e9)
    assert htod["bound"] == "host link"  # PCIe, not HBM: no share of the HBM peak
    assert math.isnan(htod["pct_of_peak_bw"]) and math.isnan(htod["pct_of_roofline"])
    assert any("host link" in note for note in eff.notes)
    ptop = k.loc["Memcpy PtoP (Device -> Device)"]
    assert ptop["bytes"] == 8e6 and ptop["bound"] == "peer link"  # NVLink / PCIe, not HBM
    assert math.isnan(ptop["pct_of_peak_bw"])
    assert "Memcpy HtoD (Pinned -> Device)" not in set(eff.far_from_roofline()["name"])
    # the mm's bytes stay its shapes', not its memset's
    mm_op = eff.ops.set_index("name").loc["aten::mm"]
    assert mm_op["bytes"] == pytest.approx(3 * n * n * 2)
    assert k.loc["gemm_kernel", "bytes"] == pytest.approx(3 * n * n * 2)
