"""The analysis names its phases to a listener, and the CLI shows them on a line of its own."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

import autoprof
from autoprof.analysis.loader.phase import listening, phase
from autoprof.cli import commands as cli

EAGER = next((Path(__file__).resolve().parents[3] / "traces" / "examples" / "eager_100")
             .glob("*/manifest.json")).parent


def test_a_gpu_summary_names_its_phases_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    seen: list[str] = []
    with listening(seen.append):
        autoprof.load(EAGER).summary()
    assert seen[:2] == ["steps and breakdown", "checks"]
    assert "predictions: fitting the host to the untraced step" in seen
    assert seen.index("predictions") < seen.index("efficiency, what-if and memory")
    phase("outside")  # no listener any more: nothing recorded
    assert "outside" not in seen


def test_a_listener_that_fails_never_fails_the_analysis() -> None:
    def broken(name: str) -> None:
        raise RuntimeError(name)

    with listening(broken):
        phase("anything")  # no exception


def test_the_phase_line_names_the_phase_once_the_summary_is_slow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    out = io.StringIO()
    with cli.PhaseLine("run", stream=out):
        phase("predictions")
        time.sleep(0.6)
    text = out.getvalue()
    assert "autoprof: analysing run: predictions" in text
    assert text.endswith("\n") and "analysed run in" in text


def test_a_fast_summary_prints_nothing() -> None:
    out = io.StringIO()
    with cli.PhaseLine("run", stream=out):
        phase("predictions")
    assert out.getvalue() == ""
