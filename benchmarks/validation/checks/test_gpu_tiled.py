"""The GPU traces tiled in time for the benchmarks keep the source's shape, N times over."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import autoprof

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from gpu_tiled import SOURCES, _run_folder, ensure_tiled  # noqa: E402


def test_a_run_tiled_three_times_has_three_times_its_steps_and_kernels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    source = autoprof.load(_run_folder(SOURCES["eager_100"])).events
    tiled = autoprof.load(ensure_tiled(tmp_path, "eager_100", 3)).events

    def kernels(ev: object) -> int:
        return int((ev["cat"].astype(str) == "kernel").sum())  # type: ignore[index]

    assert kernels(tiled) == 3 * kernels(source) > 0
    def steps(ev: object) -> int:
        return int(ev["step"][ev["step"] >= 0].nunique())  # type: ignore[index]

    assert steps(tiled) == 3 * steps(source) > 0
    assert (tiled["launch_row"] >= 0).sum() == 3 * (source["launch_row"] >= 0).sum()
