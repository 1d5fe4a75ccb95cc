"""The analysis never loads a run outside the run folder it was given: a whatif.json whose
``fixed_run`` is absolute, climbs out with ``..`` or is a symbolic link out of the folder
gets a reason, not the other run's verdict (the viewer checks its own side)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.runs import write_run

from autoprof.analysis import load


def _whatif(run: Path, fixed_run: str) -> None:
    record = {"schema_version": 1, "results": [
        {"fix": "compile", "applicable": True, "status": "faster", "baseline_us": 10.0,
         "fixed_us": 5.0, "speedup": 2.0, "fixed_run": fixed_run}]}
    (run / "whatif.json").write_text(json.dumps(record))


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink", "symlink_below"])
def test_a_fixed_run_outside_the_run_folder_is_not_loaded(tmp_path, how):
    outside = write_run(tmp_path / "elsewhere", name="secret")
    run = write_run(tmp_path / "traces")
    fixed_run = {"absolute": str(outside),
                 "dotdot": "../../../elsewhere/secret/20261130-080000-abcdef"}.get(how, "fixed")
    if how == "symlink":
        (run / "fixed").symlink_to(outside, target_is_directory=True)
    if how == "symlink_below":  # a real folder whose child links out
        (run / "fixed").mkdir()
        (run / "fixed" / "run").symlink_to(outside, target_is_directory=True)
        fixed_run = "fixed/run"
    _whatif(run, fixed_run)
    (result,) = load(run).analysis.whatif
    assert "fixed_verdict" not in result
    assert result["fixed_verdict_reason"] == f"fixed_run {fixed_run!r} is outside the run folder"


def test_a_fixed_run_inside_the_run_folder_gets_its_verdict(tmp_path):
    run = write_run(tmp_path / "traces")
    write_run(run, name="fixed")
    _whatif(run, "fixed/20261130-080000-abcdef")
    (result,) = load(run).analysis.whatif
    assert result.get("fixed_verdict"), result
