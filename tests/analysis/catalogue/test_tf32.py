"""fp32 matrix products on CUDA cores (diagnose/tf32.py): found from SIMT GEMM kernels on a
device with TF32 tensor cores, only when they hold a large share of the GPU's time, and
predicted as those kernels sped up by the ratio of peaks; on the H100 catalogue held to the
gain measured without the profiler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support.attrbuild import Trace
from support.store import committed

import autoprof
from autoprof.analysis.diagnose.tf32 import BF16, MIN_TF32_KERNEL_US, matmul_fixes
from autoprof.analysis.metrics.peaks import peak_for
from autoprof.analysis.metrics.verdict import COMPUTE_FROM_PCT

CATALOGUE = Path(__file__).resolve().parents[2] / "data" / "gpu_h100_catalogue"
H100 = "NVIDIA H100 80GB HBM3"
SGEMM = "ampere_sgemm_128x64_nn"


def _entry(cause: str, events: pd.DataFrame, device: str | None) -> dict[str, Any] | None:
    """`matmul_fixes`'s opportunity of `cause` on three 1000 us steps, or None."""
    return next((o for o in matmul_fixes(events, 3, 1000.0, device) if o["cause"] == cause),
                None)


def fp32_matmuls(events: pd.DataFrame, device: str | None) -> dict[str, Any] | None:
    return _entry("fp32_matmul", events, device)


def bf16_matmuls(events: pd.DataFrame, device: str | None) -> dict[str, Any] | None:
    return _entry("bf16_matmul", events, device)


def _trace(gemm: str, gemm_us: float, other_us: float = 50.0) -> Trace:
    """Three 1000 us steps, each a GEMM kernel of `gemm_us` and another of `other_us`, the
    host waiting at the end of each."""
    tr = Trace()
    for n in (1, 2, 3):
        t0 = 1000.0 * (n - 1)
        (tr.step(n, t0, 1000)
         .cpu("aten::mm", t0 + 5, 10)
         .launch(t0 + 6, 5, t0 + 20, gemm_us, kernel=gemm)
         .launch(t0 + 20, 5, t0 + 25 + gemm_us, other_us, kernel="elementwise_kernel")
         .cpu("cudaDeviceSynchronize", t0 + 30, gemm_us + other_us + 10, "cuda_runtime"))
    return tr


def test_simt_gemms_holding_the_gpu_are_offered_tf32_at_the_ratio_of_peaks() -> None:
    got = fp32_matmuls(_trace(SGEMM, 800.0).frame(), H100)
    assert got is not None and got["fix"] == "tf32" and got["cause"] == "fp32_matmul"
    peak = peak_for(H100)
    factor = float(peak.for_dtype("tf32") or 0) / float(peak.for_dtype("fp32") or 1)
    assert got["evidence"]["tf32_over_fp32_peak"] == pytest.approx(factor)
    # the GEMM shrinks from 800 us to 800/factor: the step gains, no more than if it vanished
    assert 1.5 < got["predicted_speedup"] <= 1000.0 / (1000.0 - 800.0) * 1.001
    assert "allow_tf32" in got["hint"]


def test_a_mid_sized_product_is_sped_up_only_to_the_shortest_tf32_kernel() -> None:
    """A 50 us SIMT GEMM: its TF32 kernel takes MIN_TF32_KERNEL_US, 2x, not the peak ratio."""
    got = fp32_matmuls(_trace(SGEMM, 50.0, other_us=5.0).frame(), H100)
    assert got is not None
    assert got["us_per_step"] == pytest.approx(50.0 - MIN_TF32_KERNEL_US)


@pytest.mark.parametrize("gemm,gemm_us,device", [
    ("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn", 800.0, H100),  # TF32 already
    (SGEMM, 800.0, None),  # no device: no tensor-core figure
    (SGEMM, 800.0, "Tesla V100-SXM2-16GB"),  # no TF32 on the device
    (SGEMM, 4.0, H100),  # 4 of 54 us of GPU time: under MIN_SHARE
    (SGEMM, 20.0, H100),  # a small product: its TF32 kernel would take no less
])
def test_no_finding_without_its_evidence_or_below_its_share(gemm: str, gemm_us: float,
                                                            device: str | None) -> None:
    assert fp32_matmuls(_trace(gemm, gemm_us).frame(), device) is None


@pytest.mark.slow
def test_the_h100_fp32_matmul_is_offered_tf32_within_its_interval() -> None:
    """The product's GPU is busy all the step: bf16 (not timed there) comes first, TF32
    (timed by hand) second."""
    about = json.loads((CATALOGUE / "catalogue_truth.json").read_text())["cases"]["fp32_matmul"]
    opps = committed.run(CATALOGUE / about["record"]["run"]).analysis.opportunities
    assert [o["fix"] for o in opps[:2]] == ["bf16-autocast", "tf32"]
    band = opps[1]["predicted_interval"]
    assert band["low"] <= about["measured_speedup"] <= band["high"]


@pytest.mark.slow
def test_the_h200_fp32_gemm_at_8192_is_predicted_within_its_interval_of_the_tf32_run() -> None:
    """The H200 efficiency runs record one 8192 product with TF32 off (an `xmma ... ffma`
    kernel on the CUDA cores) and one with it on; the ratio of their untraced calls is the
    gain measured without the profiler."""
    runs = Path(__file__).resolve().parents[2] / "data" / "gpu_h200"

    def run(name: str) -> autoprof.Run:
        (manifest,) = runs.glob(f"**/{name}/*/manifest.json")
        return committed.run(manifest.parent)

    fp32, tf32 = run("eff_gemm_fp32_8192").analysis, run("eff_gemm_tf32_8192").analysis
    assert fp32.reference.call_us and tf32.reference.call_us
    measured = fp32.reference.call_us / tf32.reference.call_us
    (found,) = [o for o in fp32.opportunities if o["cause"] == "fp32_matmul"]
    assert found["predicted_interval"]["low"] <= measured <= found["predicted_interval"]["high"]


def test_bf16_is_suggested_only_where_the_gpu_is_busy_most_of_the_step() -> None:
    """An fp32 MLP the H100 held-out set recorded with its GPU busy 99% of the step, and an
    fp32 MLP inference on the H200 busy about 30%: the hint suggests bf16 autocast on the
    first only, and says why it may be slower on the second."""
    data = Path(__file__).resolve().parents[3] / "benchmarks" / "validation" / "data"
    busy = next((data / "gpu_h100_heldout" / "runs" / "fp32_mlp_no_tf32").iterdir())
    waiting = next((data / "gpu_h200_truth_heldout10" / "runs" / "mlp_infer_b3072").iterdir())
    hints = {}
    for name, run in (("busy", busy), ("waiting", waiting)):
        opp = next(o for o in committed.summary(run)["opportunities"]
                   if o["cause"] == "fp32_matmul")
        hints[name] = (opp["hint"], opp["evidence"]["gpu_busy_pct"])
    assert hints["busy"][1] >= COMPUTE_FROM_PCT > hints["waiting"][1]
    assert hints["busy"][0].endswith(BF16) and "may run slower" not in hints["busy"][0]
    assert "may run slower" in hints["waiting"][0] and BF16 not in hints["waiting"][0]


def test_bf16_is_estimated_beside_tf32_only_where_the_gpu_is_busy_most_of_the_step() -> None:
    """The same SIMT GEMMs: bf16 at its own peak ratio (more than TF32's) where the GPU is
    busy most of the step, nothing where it mostly waits."""
    busy = _trace(SGEMM, 800.0).frame()
    tf32, bf16 = (fp32_matmuls(busy, H100), bf16_matmuls(busy, H100))
    assert tf32 is not None and bf16 is not None
    assert bf16["fix"] == "bf16-autocast" and bf16["cause"] == "bf16_matmul"
    peak = peak_for(H100)
    assert bf16["evidence"]["bf16_over_fp32_peak"] == pytest.approx(
        float(peak.for_dtype("bf16") or 0) / float(peak.for_dtype("fp32") or 1))
    assert bf16["evidence"]["gpu_busy_pct"] >= COMPUTE_FROM_PCT
    assert tf32["predicted_speedup"] < bf16["predicted_speedup"] <= 1000.0 / 200.0 * 1.001
    assert "autocast" in bf16["hint"]
    # 200 us of GEMM in a 1000 us step: the GPU waits most of it
    idle = _trace(SGEMM, 200.0).frame()
    assert fp32_matmuls(idle, H100) is not None
    assert bf16_matmuls(idle, H100) is None


@pytest.mark.slow
@pytest.mark.parametrize("folder,program", [("gpu_h100_heldout", "fp32_mlp_no_tf32"),
                                            ("gpu_h100_heldout_catalogue",
                                             "vit_fp32_training")])
def test_bf16_autocast_measured_by_hand_lies_inside_the_bf16_interval(folder: str,
                                                                       program: str) -> None:
    """Two development programs of the H100 sets with bf16 autocast timed by hand without
    the profiler: the gain lies inside the stated interval of the `bf16_matmul` estimate."""
    data = Path(__file__).resolve().parents[3] / "benchmarks" / "validation" / "data" / folder
    measured = json.loads((data / "truth.json").read_text())["cases"][program]["fixes"][
        "bf16_autocast"]["speedup"]
    run = next((data / "runs" / program).iterdir())
    (found,) = [o for o in committed.summary(run)["opportunities"]
                if o["cause"] == "bf16_matmul"]
    assert found["fix"] == "bf16-autocast"
    assert found["predicted_interval"]["low"] <= measured <= found["predicted_interval"]["high"]
