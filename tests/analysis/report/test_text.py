"""The text `autoprof summary` prints is rendered from the typed report: it says the report's
facts (header, verdict, one row per step, per finding, per fix, per rank, per top op) in
its sections' order, whichever way the report came (built, or read back from the JSON
``--json`` prints), and never prints a control character a name carried."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.store import committed

from autoprof.analysis.report.lines import short_source
from autoprof.analysis.report.model import Report
from autoprof.analysis.report.render import render
from autoprof.analysis.report.text import render_summary

REPO = Path(__file__).resolve().parents[3]
RUNS = {  # each holds a section the others do not
    "cpu": "traces/examples/cpu_mlp_train",
    "ranks": "traces/examples/ddp_step",  # two ranks, rank 1 the straggler
    "whatif": "traces/examples/seed64x100",  # check(..., try_fixes=...) measured five fixes
    "memory": "tests/data/gpu_h200/mem_leak",
    "sources": "tests/data/gpu_h100_catalogue/runs/pageable_copy",  # a finding names its line
}
ORDER = ("VERDICT:", "EVIDENCE", "STEPS (", "DIAGNOSTICS (", "TOP OPS BY SELF CPU TIME")


@pytest.fixture(autouse=True)
def _no_cache_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")  # read the committed folders, write nothing


def _report(key: str) -> Report:
    folder = next((REPO / RUNS[key]).glob("*/manifest.json")).parent
    return committed.run(folder).report()


def _section(text: str, title: str) -> list[str]:
    """The lines under the section whose title line starts with `title`, to its blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    body = lines[start + 1:]
    return body[:body.index("")] if "" in body else body


@pytest.mark.parametrize("key", sorted(RUNS))
def test_the_text_says_the_reports_facts_in_order(key: str) -> None:
    report = _report(key)
    text = render(report, "text")
    assert text == render_summary(report) == render_summary(Report.from_json(report.to_json()))
    head, run_line = text.splitlines()[:2]
    assert head == f"autoprof summary: {report.path}"
    assert run_line.startswith(f"run: {report.name} | {report.world_size} rank(s) | ")
    assert f" | {report.device_name()} | {report.events} events" in run_line
    assert run_line.endswith(f" | status {report.status}")
    assert f"VERDICT: {report.verdict}\n" in text
    at = [text.index(title) for title in ORDER]
    assert at == sorted(at)
    steps = _section(text, "STEPS (")
    assert [row.split()[:2] for row in steps[1:]] == [
        [str(s.rank), str(s.step)] for s in report.steps]
    findings = [row for row in _section(text, "DIAGNOSTICS (") if row.startswith("  [")]
    assert findings == [row for d in report.diagnostics for row in findings
                        if row.startswith(f"  [{d.severity}] {d.id}: ")]
    assert f"DIAGNOSTICS ({len(report.diagnostics)})" in text
    ops = _section(text, "TOP OPS BY SELF CPU TIME")[1:]
    named = [row for row in ops if not row.startswith("    ")]  # a line under an op: its source
    assert [row.split()[0] for row in named] == [
        r.name.split()[0] for r in report.top_ops.by_self_cpu]


@pytest.mark.parametrize("key", sorted(RUNS))
def test_a_section_is_there_exactly_when_the_report_has_its_facts(key: str) -> None:
    report = _report(key)
    text = render(report, "text")
    assert ("\nWHAT-IF (" in text) == bool(report.whatif)
    assert ("\nRANKS (" in text) == (len(report.ranks) > 1)
    assert ("\nMEMORY (" in text) == bool(report.memory)
    assert ("\nTOP GPU WORK BY SELF GPU TIME" in text) == bool(report.top_ops.by_self_device)
    assert ("\nWHERE THE TIME GOES" in text) == bool(report.breakdown.steps)


def test_each_rank_has_a_row_and_the_straggler_is_marked() -> None:
    report = _report("ranks")
    rows = _section(render(report, "text"), "RANKS (")[1:]
    assert [int(row.split()[0]) for row in rows] == [r.rank for r in report.ranks]
    marked = [int(row.split()[0]) for row in rows if row.endswith("<- straggler")]
    assert report.straggler_rank is not None and marked == [report.straggler_rank]


def test_each_fix_tried_has_a_row_with_its_status() -> None:
    report = _report("whatif")
    rows = _section(render(report, "text"), "WHAT-IF (")[1:]
    for fix in report.whatif:
        assert any(row.split()[:1] == [fix.fix] and f" {fix.status} " in row for row in rows)


def test_a_findings_source_line_is_under_it() -> None:
    report = _report("sources")
    text = render(report, "text")
    sources = [d.evidence["sources"] for d in report.diagnostics
               if isinstance(d.evidence.get("sources"), dict)]
    assert sources
    for op, line in sources[0].items():
        assert f"      {op} at {short_source(line)}" in text  # relative to the working folder


def test_control_characters_in_a_name_are_escaped() -> None:
    report = _report("cpu")
    data = report.to_dict()
    data["name"] = "evil\x1b[2J\rname"
    text = render(Report.from_dict(data), "text")
    assert "\x1b" not in text and "\r" not in text
    assert "run: evil\\x1b[2J\\rname | " in text
