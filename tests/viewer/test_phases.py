"""The viewer names each analysis phase of a first open while a page waits for it."""

from __future__ import annotations

from pathlib import Path

import pytest

import autoprof.analysis as analysis
import autoprof.viewer._phases as phases

EAGER = next((Path(__file__).resolve().parents[2] / "traces" / "examples" / "eager_100")
             .glob("*/"))


class _Slot:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.cleared = False

    def info(self, text: str) -> None:
        self.lines.append(text)

    def empty(self) -> None:
        self.cleared = True


def test_each_phase_is_named_then_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    slot = _Slot()
    monkeypatch.setattr("streamlit.empty", lambda: slot)
    run = analysis.load(EAGER)
    with phases.analysing("eager_100") as listener:
        run.summary()
    assert listener.shown[:2] == ["steps and breakdown", "checks"]
    assert "predictions" in listener.shown
    assert listener.shown.index("predictions") < listener.shown.index(
        "efficiency, what-if and memory")
    assert all(line.startswith("Analysing eager_100: ") for line in slot.lines)
    assert len(slot.lines) == len(listener.shown)
    assert slot.cleared
