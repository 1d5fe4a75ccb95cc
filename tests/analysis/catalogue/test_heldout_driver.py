"""benchmarks/gpu/heldout_driver.py's process runner: a timing printed whole is kept when the
process then fails on its way out (a gloo group torn down by the interpreter's exit), with
the exit status; a process that fails before its result is an error. Its rounds: a call cut
short mid-round leaves a truth that holds every program it reached, timed and recorded; runs
too large for one file to bring back are cut into parts the analysis joins; a record-only call
records the programs into a truth already timed, its timings kept. A GPU recording calls the
program as often as a timing process does."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))

import heldout_driver  # noqa: E402
from heldout_driver import measure, run_process  # noqa: E402
from heldout_oneshot import analyse, tar_runs  # noqa: E402

ENV = dict(os.environ)


def test_a_timing_printed_before_the_process_aborts_is_kept_with_its_status() -> None:
    code = ("import json, os, sys\nprint(json.dumps({'ms_per_iter': 1.5}))\n"
            "sys.stdout.flush()\nos.abort()")
    result = run_process(code, ENV, timeout_s=30)
    assert result["ms_per_iter"] == 1.5 and result["exit_status"] != 0


def test_a_process_that_fails_before_its_result_is_an_error() -> None:
    code = "import json\nprint(json.dumps({'warm': True}))\nraise SystemExit('capture failed')"
    assert run_process(code, ENV, timeout_s=30) == {"error": "capture failed"}


def test_a_clean_exit_returns_the_last_line() -> None:
    result = run_process("print('noise')\nprint('{\"recorded\": true}')", ENV, timeout_s=30)
    assert result == {"recorded": True}


class _Cut(Exception):
    """The call's time running out (a timeout's kill), as the fake process runner raises it."""


def _cut_call(out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A measure() of three programs whose call is cut at its eighth process."""
    cases: dict[str, Any] = {
        name: {"about": name, "setup": "", "base": "pass",
               "fixes": {"fixed": {"about": "fixed", "code": "pass", "match": ["fix"]}}}
        for name in ("first", "second", "third")}
    calls: list[str] = []

    def fake_run(code: str, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
        calls.append(code)
        if len(calls) == 8:  # first: 2 timings, a recording; second likewise; third's fix cut
            raise _Cut
        if "AUTOPROF_DIR" in env:  # the recording process
            return {"recorded": True}
        return {"ms_per_iter": 2.0 if "FIXED = None" in code else 1.0}

    monkeypatch.setattr(heldout_driver, "run_process", fake_run)
    with pytest.raises(_Cut):
        measure(cases, {"out": str(out), "device": "cpu", "dry": True, "rounds": 2,
                        "budget_s": 1e9, "timeout_s": 5.0, "record": True,
                        "record_calls": 2})


def test_a_call_cut_mid_round_keeps_each_program_it_reached_timed_and_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _cut_call(tmp_path, monkeypatch)
    truth = json.loads((tmp_path / "truth.json").read_text())
    reached = {name: entry for name, entry in truth["cases"].items() if "record" in entry}
    assert sorted(reached) == ["first", "second"]
    for entry in reached.values():
        assert entry["fixes"]["fixed"]["speedup"] == 2.0
    assert truth["cases"]["third"]["rounds"] == {"as_written": [], "fixed": []}
    assert truth["meta"]["rounds"] == 1


def test_the_analysis_of_a_cut_call_reads_its_runs_left_untarred(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, into = tmp_path / "out", tmp_path / "into"
    _cut_call(out, monkeypatch)
    (out / "runs" / "first" / "run").mkdir(parents=True)
    (out / "runs" / "first" / "run" / "manifest.json").write_text("{}")
    analyse(out, into)
    assert (into / "runs" / "first" / "run" / "manifest.json").read_text() == "{}"
    assert json.loads((into / "truth.json").read_text())["cases"].keys() == {
        "first", "second", "third"}


def test_runs_larger_than_a_part_come_back_in_parts_that_the_analysis_joins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, into = tmp_path / "out", tmp_path / "into"
    _cut_call(out, monkeypatch)
    trace = os.urandom(50_000)  # incompressible, so the tar stays larger than two parts
    (out / "runs" / "first" / "run").mkdir(parents=True)
    (out / "runs" / "first" / "run" / "trace.bin").write_bytes(trace)
    tar_runs(out, part_bytes=20_000)
    parts = sorted(p.name for p in out.glob("runs.tar.gz*"))
    assert parts == ["runs.tar.gz.00", "runs.tar.gz.01", "runs.tar.gz.02"]
    assert all((out / p).stat().st_size <= 20_000 for p in parts)
    analyse(out, into)
    assert (into / "runs" / "first" / "run" / "trace.bin").read_bytes() == trace


def test_a_record_only_call_records_every_program_and_keeps_the_timings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _cut_call(tmp_path, monkeypatch)
    recorded: list[str] = []

    def fake_record(code: str, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
        assert "AUTOPROF_DIR" in env, "a record-only call times nothing"
        recorded.append(code)
        return {"recorded": True}

    monkeypatch.setattr(heldout_driver, "run_process", fake_record)
    cases = {name: {"about": name, "setup": "", "base": "pass",
                    "fixes": {"fixed": {"about": "fixed", "code": "pass", "match": ["fix"]}}}
             for name in ("first", "second", "third")}
    truth = measure(cases, {"out": str(tmp_path), "device": "cpu", "dry": True, "rounds": 1,
                            "budget_s": 1e9, "timeout_s": 5.0, "record": True,
                            "record_calls": 2, "record_only": True})
    assert len(recorded) == 3
    assert {n: "record" in e for n, e in truth["cases"].items()} == {
        "first": True, "second": True, "third": True}
    assert truth["cases"]["first"]["fixes"]["fixed"]["speedup"] == 2.0
    assert truth["meta"]["rounds"] == 1 and truth["meta"]["recorded_apart"] is True


def _calls_made(code: str, cuda: bool) -> int:
    """How many times a recording program calls its decorated iteration (its setup and
    autoprof left out: the loop header read as Python)."""
    loop = next(line for line in code.splitlines() if line.startswith("for _ in range("))
    return int(eval(loop[len("for _ in range("):-2], {"CUDA": cuda}))  # noqa: S307


def test_a_gpu_recording_runs_as_long_as_a_timing_process_so_the_block_after_it_fits() -> None:
    quick = {"about": "", "setup": "", "base": "pass", "fixes": {}}
    slow = {**quick, "timing": {"warmup": 3, "blocks": 5, "iters": 6}}
    for case, timed in ((quick, 10 + 5 * 20), (slow, 3 + 5 * 6)):
        assert heldout_driver.timing_calls(case) == timed
        code = heldout_driver.record_code("p", case, "cuda", False, 20)
        assert _calls_made(code, cuda=True) == max(20, timed)
        assert _calls_made(code, cuda=False) == 20  # the CPU takes no block
