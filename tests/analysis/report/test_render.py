"""``render(report, fmt)`` is the one door to the text, Markdown and notebook reports, and "the
best measured fix" is one rule (loader/whatif.measured_win) that every report applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.store import committed

from autoprof.analysis.loader.whatif import best_fix
from autoprof.analysis.report.markdown import render_markdown
from autoprof.analysis.report.model import Report, WhatIfResult
from autoprof.analysis.report.notebook import render_html
from autoprof.analysis.report.render import FORMATS, render
from autoprof.analysis.report.text import render_summary

REPO = Path(__file__).resolve().parents[3]
WHATIF_RUN = next((REPO / "traces" / "examples" / "seed64x100").glob("*/manifest.json")).parent


@pytest.fixture(autouse=True)
def _no_cache_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    out: dict[str, Any] = committed.run(WHATIF_RUN).summary()
    return out


def test_each_format_is_what_its_renderer_makes_of_the_same_record(summary: dict[str, Any]) -> None:
    report = Report.from_dict(summary)
    assert render(report, "text") == render_summary(report)
    assert render(report, "markdown") == render_markdown(report)
    assert render(report, "html") == render_html(report)
    assert {fmt: bool(render(report, fmt).strip()) for fmt in FORMATS} == dict.fromkeys(
        FORMATS, True)
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        render(report, "pdf")  # type: ignore[arg-type]


def _result(fix: str, status: str, speedup: float | None,
            outputs_match: bool | None) -> dict[str, Any]:
    return {"fix": fix, "status": status, "speedup": speedup, "outputs_match": outputs_match,
            "baseline_us": 100.0, "fixed_us": 100.0 / speedup if speedup else None}


CASES = [
    _result("bf16", "outputs differ", 3.0, False),  # fastest, but changes the answer
    _result("cuda-graph", "cannot tell", 2.5, True),  # the interval straddles 1
    _result("compile", "faster", 1.4, None),  # outputs not comparable: still a win
    _result("inference-mode", "faster", 1.2, True),
]


def test_every_report_names_the_same_best_measured_fix(summary: dict[str, Any]) -> None:
    results = [{**r, "doc": r["fix"], "applicable": True} for r in CASES]
    assert (best_fix(results) or {}).get("fix") == "compile"
    report = Report.from_dict({**summary, "whatif": results})
    assert [r.fix for r in report.whatif if r.is_win()] == ["compile", "inference-mode"]
    assert report.best_fix() == WhatIfResult.from_dict(results[2])
    markdown = render(report, "markdown")
    html = render(report, "html")
    assert "**Best measured fix** (what-if): compile: 1.40x faster" in markdown
    assert "<b>Best measured fix</b> (what-if): compile: 1.40x faster" in html
    assert "outputs not compared" in markdown


def test_no_win_no_best_fix(summary: dict[str, Any]) -> None:
    results = [{**r, "doc": r["fix"], "applicable": True} for r in CASES[:2]]
    report = Report.from_dict({**summary, "whatif": results})
    assert report.best_fix() is None and best_fix(results) is None
    assert "**What-if**: 2 fix(es) tried, none measured faster" in render(report, "markdown")
    assert "Best measured fix" not in render(report, "html")
