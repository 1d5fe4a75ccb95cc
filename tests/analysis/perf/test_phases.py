"""The analysis names its phases to a listener, and the CLI shows them on a line of its own."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest

import autoprof
from autoprof.analysis.loader.phase import listening, phase
from autoprof.cli import progress as cli

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


def test_a_warning_during_the_phase_line_gets_a_line_of_its_own(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    with cli.PhaseLine("run", stream=sys.stderr):
        phase("predictions")
        time.sleep(0.6)  # the line is drawn
        cli.one_line_warning("whatif.json: not JSON", UserWarning, "x.py", 1)
        time.sleep(0.6)  # and drawn again after the warning
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    warning = "autoprof: warning: whatif.json: not JSON"
    assert warning in lines  # the whole line, alone
    after = lines[lines.index(warning) + 1:]
    assert any(ln.startswith("autoprof: analysing run") for ln in after)
