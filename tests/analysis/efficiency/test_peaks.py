"""The device peak table and its overrides."""

from __future__ import annotations

import pytest

from autoprof.analysis.analysis import default_options
from autoprof.analysis.metrics.peaks import known_devices, lookup, peak_for

ENV_TFLOPS = "AUTOPROF_PEAK_TFLOPS"
ENV_GBPS = "AUTOPROF_PEAK_GBPS"

REQUIRED = ["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3",
            "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA L4", "NVIDIA L40S", "NVIDIA A10G",
            "NVIDIA GeForce RTX 4090", "AMD Instinct MI300X"]


@pytest.mark.parametrize("device", REQUIRED)
def test_every_required_device_has_figures_and_a_source(device: str) -> None:
    peak = lookup(device)
    assert peak is not None, known_devices()
    for dtype in ("fp32", "tf32", "bf16", "fp16"):
        assert peak.tflops[dtype] > 0
    assert peak.gbps and peak.gbps > 0
    assert "datasheet" in peak.source or "whitepaper" in peak.source
    # tensor cores: bf16 at least twice tf32's rate, tf32 at least fp32's
    assert peak.tflops["bf16"] >= 1.9 * peak.tflops["tf32"] >= 1.9 * peak.tflops["fp32"] / 2


def test_h200_ridge_point() -> None:
    peak = lookup("NVIDIA H200")
    assert peak is not None
    assert peak.ridge("bf16") == pytest.approx(989.5e12 / 4800e9)
    assert peak.ridge("int4") is None


def test_lookup_ignores_case_and_spacing_and_rejects_unknown() -> None:
    assert lookup("  nvidia   h200 ") is not None
    assert lookup("NVIDIA B300") is None and lookup(None) is None


def test_unknown_device_gets_no_shares_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_TFLOPS, raising=False)
    monkeypatch.delenv(ENV_GBPS, raising=False)
    bare = peak_for("NVIDIA B300", default_options().peak_tflops, default_options().peak_gbps)
    assert bare.tflops == {} and bare.gbps is None
    monkeypatch.setenv(ENV_TFLOPS, "2250")
    monkeypatch.setenv(ENV_GBPS, "8000")
    options = default_options()  # the environment is read here, at the edge
    assert peak_for("NVIDIA B300") == bare  # never by the metric itself
    told = peak_for("NVIDIA B300", options.peak_tflops, options.peak_gbps)
    assert told.for_dtype("bf16") == 2250 and told.gbps == 8000
    assert ENV_TFLOPS not in told.source and "given" in told.source
    assert peak_for("NVIDIA B300", peak_tflops=100).for_dtype("fp8") == 100  # argument wins


def test_unreadable_override_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_TFLOPS, "fast")
    monkeypatch.setenv(ENV_GBPS, "-3")
    options = default_options()
    assert options.peak_tflops is None and options.peak_gbps is None
    assert peak_for("NVIDIA H200", options.peak_tflops, options.peak_gbps) == lookup("NVIDIA H200")
