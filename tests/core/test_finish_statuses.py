"""Statuses the finisher must not get wrong: a live run opened by its own program, ranks that
are missing, a folder read again, and steps no trace holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import autoprof
import autoprof.record.finisher.folder as finish
from autoprof import runfolder as rf
from autoprof.runfolder.final import NO_TRACE_DIED
from tests.core.conftest import manifest, only_run

REPO = Path(__file__).resolve().parents[2]


def _child(traces: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AUTOPROF_DIR": str(traces), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_summary_the_recording_program_runs_leaves_its_live_run_alone(traces_root):
    """A child of the recording process (a summary or finish it runs between cycles) has the
    recorder as its parent: that parent is recording, not gone."""
    fn = autoprof.autoprof(name="own_summary", warmup=0,
                           schedule=dict(wait=0, warmup=1, active=3))(lambda x: x + 1)
    fn(torch.ones(2))
    fn(torch.ones(2))  # recording, not handed over
    run = fn.autoprof_session.run_dir
    out = _child(traces_root, "autoprof", "summary", str(run))
    assert "finished it" not in out.stderr
    assert manifest(run)["status"] == "recording"
    out = _child(traces_root, "autoprof.finish", str(run))
    assert out.returncode == 0 and "nothing to do" in out.stdout, out.stderr
    assert manifest(run)["status"] == "recording"
    fn.autoprof_session.flush()
    assert manifest(run)["status"] == "partial" and manifest(run)["steps_recorded"] == 1


def _two_ranks(tmp_path: Path, rank1: dict[str, object] | None) -> Path:
    """A torch.distributed run folder as its finishers leave it: rank 0 complete, rank 1 as
    given (None: no manifest), the top manifest still 'recording'."""
    run = tmp_path / "ddp" / "run"
    run.mkdir(parents=True)
    base = {"schema_version": 1, "name": "ddp", "world_size": 2, "host": "elsewhere",
            "options": {"schedule": {"wait": 0, "warmup": 1, "active": 1, "repeat": 1}},
            "steps_recorded": 1}
    (run / "rank0.manifest.json").write_text(json.dumps(
        {**base, "rank": 0, "status": "complete", "files": ["rank0.t.pt.trace.json.gz"]}))
    (run / "manifest.json").write_text(json.dumps({**base, "rank": 0, "status": "recording"}))
    if rank1 is not None:
        (run / "rank1.manifest.json").write_text(json.dumps({**base, "rank": 1, **rank1}))
    return run


KILLED = {"status": "failed", "steps_recorded": 0,
          "error": {"type": "NoTrace", "message": NO_TRACE_DIED, "phase": "export"}}


def test_a_rank_that_failed_is_missing_from_the_run(tmp_path):
    run = _two_ranks(tmp_path, KILLED)
    result = finish.finish_folder(run, this_host_only=True)
    assert result is not None and result.status == "partial"
    top = manifest(run)
    assert top["status"] == "partial" and top["missing_ranks"] == [1]
    assert top["missing_reason"] == f"rank 1 failed: NoTrace: {NO_TRACE_DIED}"


def test_a_rank_without_a_manifest_or_still_recording_is_missing(tmp_path):
    run = _two_ranks(tmp_path, None)
    finish.finish_folder(run, this_host_only=True)
    assert manifest(run)["missing_ranks"] == [1]
    assert "wrote no readable manifest" in manifest(run)["missing_reason"]
    (run / "rank1.manifest.json").write_text(json.dumps(
        {"schema_version": 1, "name": "ddp", "world_size": 2, "rank": 1, "host": "elsewhere",
         "status": "recording"}))
    finish.finish_folder(run, this_host_only=True)  # another host's: left recording
    assert "still recording" in manifest(run)["missing_reason"]


def test_a_partial_rank_makes_the_run_partial(tmp_path):
    run = _two_ranks(tmp_path, {"status": "partial"})
    finish.finish_folder(run, this_host_only=True)
    top = manifest(run)
    assert top["status"] == "partial" and "missing_ranks" not in top


def test_a_run_finished_with_missing_ranks_is_not_rewritten_on_each_read(tmp_path, capsys):
    from autoprof.cli.commands import _finish_left_recording

    run = _two_ranks(tmp_path, KILLED)
    _finish_left_recording(run)
    assert "finished it: partial" in capsys.readouterr().err
    before = (run / "manifest.json").stat().st_mtime_ns, (run / "manifest.json").read_bytes()
    for _ in range(2):
        assert finish.finish_folder(run, this_host_only=True) is None
        _finish_left_recording(run)
        assert capsys.readouterr().err == ""
    after = (run / "manifest.json").stat().st_mtime_ns, (run / "manifest.json").read_bytes()
    assert after == before
    # a missing rank finished since: the run is merged again
    (run / "rank1.manifest.json").write_text(json.dumps(
        {"schema_version": 1, "name": "ddp", "world_size": 2, "rank": 1, "status": "complete"}))
    result = finish.finish_folder(run, this_host_only=True)
    assert result is not None and result.status == "complete"
    assert "missing_ranks" not in manifest(run) and "missing_reason" not in manifest(run)


def test_no_steps_are_recorded_that_no_trace_holds():
    handed = rf.Manifest(name="r", status="recording", requested_status="failed",
                         steps_recorded=3, options={"schedule": {"active": 3, "repeat": 2}},
                         error={"type": "KeyboardInterrupt", "message": "", "phase": "export"})
    none = rf.final_status(handed, 0)
    assert (none.status, none.steps_recorded) == ("failed", 0)
    assert none.error is not None and none.error["type"] == "KeyboardInterrupt"
    assert rf.final_status(handed.replace(steps_recorded=5), 1).steps_recorded == 3
    assert rf.final_status(handed.replace(steps_recorded=2), 1).steps_recorded == 2
    unknown = handed.replace(options={}, requested_status="partial", error=None)
    assert rf.final_status(unknown, 1).steps_recorded == 3  # no schedule: nothing to cap by


def test_ctrl_c_in_the_last_export_stays_failed_with_no_steps_after_the_finisher(
        monkeypatch, traces_root):
    """A Ctrl+C in the export of the only cycle: the session fails the run with
    KeyboardInterrupt; its finisher keeps that and counts no step, since no trace holds one."""
    import autoprof.record.export as export

    def interrupted(prof, run_dir, worker):
        raise KeyboardInterrupt

    monkeypatch.setattr(export, "export_raw_trace", interrupted)
    fn = autoprof.autoprof(name="ctrl_c_export", warmup=0,
                           schedule=dict(wait=0, warmup=1, active=3))(lambda x: x + 1)
    with warnings.catch_warnings(record=True), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("always")
        for _ in range(4):
            fn(torch.ones(1))
    fn.autoprof_session.flush()
    run = only_run(traces_root, "ctrl_c_export")
    m = manifest(run)
    assert m["status"] == "failed" and m["error"]["type"] == "KeyboardInterrupt"
    assert m["steps_recorded"] == 0 and not list(run.glob("*trace*"))


def _with_profiler_start(run: Path, value: object) -> dict[str, object]:
    from autoprof.analysis import load
    from autoprof.analysis.report.schema import summary_errors
    from autoprof.analysis.report.summary import summarize

    record = manifest(run)
    rf.write_manifest(run / rf.MANIFEST, rf.Manifest.from_json(
        {**record, "profiler_start_ms": value}, "test"))
    summary = summarize(load(run)).to_dict()
    assert summary_errors(summary) == []
    return summary


def test_the_profiler_start_stall_is_in_the_summary_and_noted_when_large(traces_root):
    from autoprof.analysis.report.model import Report
    from autoprof.analysis.report.text import render_summary

    fn = autoprof.autoprof(name="start_stall", warmup=0, schedule=dict(wait=0, warmup=1,
                                                                        active=1))(lambda x: x + 1)
    fn(torch.ones(2))
    fn(torch.ones(2))
    fn.autoprof_session.flush()
    run = only_run(traces_root, "start_stall")
    assert isinstance(manifest(run)["profiler_start_ms"], float)  # the session wrote it
    large = _with_profiler_start(run, 912.5)
    assert large["profiler_start_ms"] == 912.5
    line = ("profiler start: the call where the profiler started took 912 ms longer (torch's "
            "trace setup; outside the measured steps)")
    assert line in " ".join(render_summary(Report.from_dict(large)).split())
    small = _with_profiler_start(run, 40.0)
    assert small["profiler_start_ms"] == 40.0
    assert "profiler start:" not in render_summary(Report.from_dict(small))
    for unusable in ("slow", True, None):
        summary = _with_profiler_start(run, unusable)
        assert summary["profiler_start_ms"] is None
        assert "profiler start:" not in render_summary(Report.from_dict(summary))
