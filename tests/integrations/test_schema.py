"""Every summary JSON of every committed run folder validates against the shipped schema, and
the schema catches what it promises to catch."""

from __future__ import annotations

import copy
import json
import subprocess
from functools import cache
from pathlib import Path

import jsonschema
import pytest
from support.store import committed

from autoprof.analysis import TraceError
from autoprof.analysis.report.schema import (
    SCHEMA_VERSION,
    load_schema,
    schema_text,
    summary_errors,
    validate_summary,
)

REPO = Path(__file__).resolve().parents[2]


def committed_run_folders() -> list[str]:
    """Each folder holding a committed manifest.json, under traces/ and tests/data/."""
    listed = subprocess.run(["git", "ls-files", "traces", "tests/data"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    return sorted(str(Path(p).parent) for p in listed if p.endswith("/manifest.json"))


RUNS = committed_run_folders()


@cache
def summary_of(folder: str) -> dict | None:
    try:
        return committed.run(REPO / folder).summary()
    except TraceError:
        return None


@pytest.fixture(autouse=True)
def _no_cache_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")  # read the committed folders, write nothing


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["x-schema-version"] == SCHEMA_VERSION
    jsonschema.Draft202012Validator.check_schema(schema)


def test_there_are_committed_runs_to_check() -> None:
    assert len(RUNS) >= 50, RUNS


@pytest.mark.slow
@pytest.mark.parametrize("folder", RUNS)
def test_every_committed_run_summary_validates(folder: str) -> None:
    summary = summary_of(folder)
    if summary is None:  # a bad input by design: one TraceError line, no JSON at all
        assert folder.startswith("tests/data/bad/") or "collect/runs" in folder, folder
        pytest.skip("not loadable (TraceError): no JSON to validate")
    json.loads(json.dumps(summary, allow_nan=False))  # what --json prints
    validate_summary(summary)


def test_a_folder_of_runs_validates(capsys: pytest.CaptureFixture[str]) -> None:
    from autoprof.cli import main

    assert main(["summary", "--json", str(REPO / "traces" / "examples")]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert len(listing["runs"]) >= 5
    validate_summary(listing)


MANY_RANKS = [f for f in RUNS if f.startswith(("traces/examples/ddp_step",
                                               "tests/data/gpu_h200_x2/runs/ddp_straggler"))]


@pytest.mark.parametrize("folder", MANY_RANKS)
def test_a_run_analysed_rank_by_rank_validates(folder: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`autoprof summary --json --jobs 1` prints the reduce's report: a Report like one run's,
    with its rank_by_rank section, in the schema, read back into the type as it was written."""
    from autoprof.analysis.report.model import Report
    from autoprof.cli import main

    assert main(["summary", "--json", "--jobs", "1", str(REPO / folder)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rank_by_rank"]["ranks_analysed"] == len(printed["ranks"]) == 2
    validate_summary(printed)
    report = Report.from_dict(printed)
    assert json.dumps(report.to_dict()) == json.dumps(printed)  # keys, order, 3 vs 3.0
    broken = {**printed, "straggler_rank": "one"}
    assert any(e.startswith("straggler_rank: 'one' is not of type") for e in
               summary_errors(broken))


def test_violations_are_named_by_key() -> None:
    good = next(s for s in map(summary_of, RUNS) if s is not None and s["diagnostics"])
    bad = copy.deepcopy(good)
    del bad["verdict_reason"]
    bad["verdict"] = "slow"
    bad["diagnostics"][0]["severity"] = 3
    errors = summary_errors(bad)
    assert any(e.startswith("(top): 'verdict_reason' is a required property") for e in errors)
    assert any(e.startswith("verdict: 'slow' is not one of") for e in errors)
    assert any(e.startswith("diagnostics/0/severity") for e in errors)
    with pytest.raises(ValueError, match="breaks summary.schema.json"):
        validate_summary(bad)
    extra = copy.deepcopy(good)
    extra["a_key_added_later"] = {"any": "thing"}  # additive keys stay valid
    assert summary_errors(extra) == []


def test_autoprof_schema_prints_the_shipped_file(capsys: pytest.CaptureFixture[str]) -> None:
    from autoprof.cli import main

    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(schema_text())


def test_the_diff_schema_is_a_valid_draft_2020_12_schema_shipped_as_package_data() -> None:
    from autoprof.analysis.report.schema import (
        DIFF_SCHEMA_FILE,
        DIFF_SCHEMA_VERSION,
        load_diff_schema,
    )

    schema = load_diff_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["x-schema-version"] == DIFF_SCHEMA_VERSION
    assert schema["$id"] == f"urn:autoprof:diff:{DIFF_SCHEMA_VERSION}"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert f"analysis/report/{DIFF_SCHEMA_FILE}" in (REPO / "pyproject.toml").read_text()
