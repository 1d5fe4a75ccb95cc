"""The efficiency key of the summary, the CLI's EFFICIENCY section, Run.efficiency()."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from support.efficiency_trace import TraceBuilder, mm

import autoprof.analysis as analysis
from autoprof.analysis.report.text import render_summary

ROOT = Path(__file__).resolve().parents[2] / "data" / "gpu_h200"
RECORDED = json.loads((ROOT / "recorded.json").read_text())["cases"]
KERNEL_KEYS = {"name", "calls", "gpu_us", "flops", "tflops", "pct_of_peak_flops", "bytes",
               "gbps", "pct_of_peak_bw", "intensity", "bound"}


def _load(case: str) -> analysis.Run:
    return analysis.load(ROOT / RECORDED[case]["run"])


def test_summary_efficiency_has_the_interface_keys() -> None:
    summary = _load("eff_gemm_tf32_8192").summary()
    eff = summary["efficiency"]
    assert eff["device"] == "NVIDIA H200"
    assert eff["peak"]["gbps"] == 4800 and eff["peak"]["tflops"]["tf32"] == 494.5
    assert "datasheet" in eff["peak"]["source"]
    assert 0 < eff["mfu_pct"] < 100 and eff["step_tflops"] > 0
    assert eff["kernels"] and all(KERNEL_KEYS <= set(k) for k in eff["kernels"])
    gpu_us = [k["gpu_us"] for k in eff["kernels"]]
    assert gpu_us == sorted(gpu_us, reverse=True)
    assert json.loads(json.dumps(summary)) == summary  # JSON-able: no NaN, no numpy


def test_run_efficiency_is_the_kernel_table() -> None:
    run = _load("eff_sdpa")
    table = run.efficiency()
    assert isinstance(table, pd.DataFrame)
    assert KERNEL_KEYS <= set(table.columns)
    assert table.iloc[0]["bound"] == "compute" and table.iloc[0]["dtype"] == "bf16"


def test_cli_text_has_the_section_for_gpu_runs_only(tmp_path: Path) -> None:
    text = render_summary(_load("eff_gemm_fp32_8192").report())
    section = text[text.index("EFFICIENCY"):]
    assert "NVIDIA H200" in section and "TFLOP/s" in section and "compute" in section
    assert "low-efficiency" in text and "set_float32_matmul_precision" in text
    b = TraceBuilder(device=None)
    b.events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                     "ts": 1.0, "dur": 5.0})
    cpu_only = analysis.load(b.write(tmp_path / "cpu.json"))
    assert "EFFICIENCY" not in render_summary(cpu_only.report())


def test_synthetic_fp32_gemm_is_flagged_and_bf16_is_not(tmp_path: Path) -> None:
    def ids(dtype: str, kernel: str, us: float) -> set[str]:
        b = TraceBuilder()
        for _ in range(3):
            b.step_with((*mm(8192, dtype), [(kernel, us)]), cpu_us=20.0)
        path = tmp_path / f"{dtype}.json"
        return {d.id for d in analysis.load(b.write(path)).diagnostics()}

    assert "low-efficiency" in ids("float", "sgemm_ffma", 21000.0)
    assert "low-efficiency" not in ids("c10::BFloat16", "nvjet_bf16", 1400.0)
    assert "low-efficiency" in ids("c10::BFloat16", "slow_bf16", 14000.0)  # 8% of the roof
