"""The report is one type that owns its JSON both ways: every committed run's summary reads into
``Report`` and writes back the same JSON, byte for byte; the shipped schema is the one the type
generates."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
from support.store import committed

from autoprof.analysis import Report, TraceError
from autoprof.analysis.report.model import WhatIfResult
from autoprof.analysis.report.model.schema import summary_schema_text
from autoprof.analysis.report.schema import schema_text, summary_errors

REPO = Path(__file__).resolve().parents[3]
WHATIF_RUN = "traces/examples/seed64x100"  # check(..., try_fixes=...) measured five fixes
QUICK_RUNS = ("traces/examples/ddp_step", "tests/data/gpu_h100_catalogue/runs/pageable_copy",
              WHATIF_RUN)


def committed_run_folders() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "traces", "tests/data"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    return sorted(str(Path(p).parent) for p in listed if p.endswith("/manifest.json"))


@pytest.fixture(autouse=True)
def _no_cache_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")  # read the committed folders, write nothing


def _round_trip(folder: str) -> None:
    try:
        run = committed.run(REPO / folder)
        summary = run.summary()
    except TraceError:  # a bad input by design: one TraceError line, no report
        pytest.skip("not loadable (TraceError)")
    report = run.report()
    assert isinstance(report, Report)
    assert report.verdict == summary["verdict"]
    assert json.dumps(report.to_dict()) == json.dumps(summary)  # keys, order, 3 vs 3.0
    assert json.loads(report.to_json()) == summary
    assert Report.from_json(report.to_json()) == report


def _a_run_folder(root: str) -> str:
    found = [f for f in committed_run_folders() if f.startswith(root)]
    assert found, root
    return found[0]


@pytest.mark.parametrize("root", QUICK_RUNS)
def test_a_committed_run_reads_into_the_report_and_writes_back_the_same_json(root: str) -> None:
    _round_trip(_a_run_folder(root))


@pytest.mark.slow
@pytest.mark.parametrize("folder", committed_run_folders())
def test_every_committed_run_report_round_trips(folder: str) -> None:
    _round_trip(folder)


def test_the_shipped_schema_is_the_one_the_types_generate() -> None:
    assert schema_text() == summary_schema_text(), (
        "regenerate: python -m autoprof.analysis.report.model.schema "
        "> autoprof/analysis/report/summary.schema.json")


def test_a_summary_that_breaks_the_type_is_refused_naming_the_key() -> None:
    summary = committed.run(REPO / _a_run_folder("traces/examples")).summary()
    bad = copy.deepcopy(summary)
    bad["verdict"] = "slow"
    with pytest.raises(ValueError, match=r"run\.json: not a Report: .*\$\.verdict"):
        Report.from_dict(bad, where="run.json")
    assert any(e.startswith("verdict:") for e in summary_errors(bad))  # the schema agrees
    del bad["verdict"]
    with pytest.raises(ValueError, match="missing required field `verdict`"):
        Report.from_dict(bad)


def test_keys_a_newer_autoprof_adds_are_read_past() -> None:
    row = WhatIfResult.from_dict({"fix": "compile", "applicable": True, "status": "faster",
                                  "a_later_key": 1})
    assert row.to_dict() == {"fix": "compile", "applicable": True, "status": "faster"}
