"""Copies on a real H200 (a training step that reads its loss with .item()): memcpys and
memsets are rated from the byte counts Kineto gives them, worked out here from the raw trace."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

import autoprof.analysis as analysis

RUN = (Path(__file__).resolve().parents[2]
       / "data/gpu_h200/attr_item_gpu_step/20261201-093730-0eb57a")
H200_GBPS = 4800.0


def _raw_copies() -> dict[str, list[dict]]:
    (trace,) = RUN.glob("*.pt.trace.json.gz")
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    out: dict[str, list[dict]] = {}
    for e in events:
        if e.get("cat") in ("gpu_memcpy", "gpu_memset"):
            out.setdefault(e["name"], []).append(e)
    return out


@pytest.fixture(scope="module")
def kernels() -> dict:
    eff = analysis.load(RUN).analysis.efficiency
    return eff.kernels.set_index("name").to_dict(orient="index")


def test_device_to_device_copies_against_hbm(kernels: dict) -> None:
    raw = _raw_copies()["Memcpy DtoD (Device -> Device)"]
    moved = 2 * sum(e["args"]["bytes"] for e in raw)  # each byte read and written
    seconds = sum(e["dur"] for e in raw) * 1e-6
    k = kernels["Memcpy DtoD (Device -> Device)"]
    assert k["calls"] == len(raw) == 3
    assert k["bytes"] == pytest.approx(moved)
    assert k["gbps"] == pytest.approx(moved / seconds / 1e9)
    assert k["pct_of_peak_bw"] == pytest.approx(100 * k["gbps"] / H200_GBPS)
    assert k["bound"] == "memory"


def test_device_to_host_copies_are_bounded_by_the_host_link(kernels: dict) -> None:
    raw = _raw_copies()["Memcpy DtoH (Device -> Pinned)"]
    k = kernels["Memcpy DtoH (Device -> Pinned)"]
    assert k["bytes"] == pytest.approx(sum(e["args"]["bytes"] for e in raw))
    assert k["bound"] == "host link"
    assert math.isnan(k["pct_of_peak_bw"]) and math.isnan(k["pct_of_roofline"])


def test_memsets_keep_their_own_bytes(kernels: dict) -> None:
    raw = _raw_copies()["Memset (Device)"]
    k = kernels["Memset (Device)"]
    assert k["bytes"] == pytest.approx(sum(e["args"]["bytes"] for e in raw))
    assert k["bound"] == "memory"
