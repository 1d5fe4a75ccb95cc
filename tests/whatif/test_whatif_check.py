"""autoprof.check(..., try_fixes=...): whatif.json in the run folder, the summary, the CLI."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

import autoprof
from autoprof import autoprof as autoprof_decorator
from autoprof.analysis.loader.whatif import read_whatif
from autoprof.analysis.report.model import Report
from autoprof.analysis.report.text import render_summary

TINY = {"wait": 0, "warmup": 1, "active": 1, "repeat": 1}


def _manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def test_check_writes_whatif_json_lists_it_and_the_summary_shows_it():
    w = torch.randn(16, 16, requires_grad=True)

    @autoprof_decorator(name="fwd", warmup=1, schedule=TINY,
                        try_fixes=("inference-mode", "cuda-graph"))
    def forward(x):
        return torch.relu(x @ w)

    run = autoprof.check(forward, torch.randn(8, 16))
    run_dir = Path(run.path)
    record = json.loads((run_dir / "whatif.json").read_text())
    assert record["schema_version"] == 1 and record["tried"] == ["inference-mode", "cuda-graph"]
    assert "whatif.json" in _manifest(run_dir)["files"]
    assert [t.name for t in run.trace_paths if t.name == "whatif.json"] == []  # not a trace

    whatif = run.summary()["whatif"]
    assert [r["fix"] for r in whatif] == ["inference-mode", "cuda-graph"]
    inference, graph = whatif
    assert inference["applicable"] and inference["outputs_match"] is True
    assert inference["baseline_us"] > 0 and inference["fixed_us"] > 0
    assert inference["speedup"] == pytest.approx(inference["baseline_us"] / inference["fixed_us"])
    assert graph == {**graph, "applicable": False, "reason": "no CUDA device", "speedup": None}
    text = render_summary(run.report())
    assert "WHAT-IF" in text and "no CUDA device" in text
    assert any(line.lstrip().startswith("inference-mode") and "match" in line
               for line in text.splitlines())


def test_the_check_keyword_overrides_the_decorator_option_and_bad_names_fail_early():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    with pytest.raises(ValueError, match="unknown fix"):
        autoprof.check(f, torch.ones(2), try_fixes=("compile", "turbo"))
    assert calls == []  # refused before the function ran

    @autoprof_decorator(name="g", warmup=0, schedule=TINY, try_fixes="all")
    def g(x):
        return x + 1

    run = autoprof.check(g, torch.ones(2), try_fixes="channels-last")
    assert [r["fix"] for r in run.summary()["whatif"]] == ["channels-last"]


def test_without_try_fixes_nothing_is_tried():
    run = autoprof.check(lambda x: x * 2, torch.ones(2))
    assert not (Path(run.path) / "whatif.json").exists()
    assert run.summary()["whatif"] == []
    assert "WHAT-IF" not in render_summary(run.report())


def test_a_failure_inside_whatif_is_a_warning_and_the_run_is_returned(monkeypatch):
    import autoprof.record.whatif as whatif

    def broken(*args, **kwargs):
        raise RuntimeError("harness bug")

    import autoprof.record.check as check_module

    monkeypatch.setattr(whatif, "what_if", broken)
    monkeypatch.setattr(check_module, "what_if", broken, raising=False)  # imported by name
    with pytest.warns(autoprof.AutoprofWarning, match="trying the fixes failed.*harness bug"):
        run = autoprof.check(lambda x: x * 2, torch.ones(2), try_fixes=("bf16",))
    assert len(run.events) > 0


@pytest.mark.parametrize("content,problem", [
    ("{not json", "not valid JSON"),
    ('{"results": []}', "schema_version None"),
    ('{"schema_version": 9, "results": []}', "newer than this autoprof reads"),
    ('{"schema_version": 1, "results": [{"fix": "x"}]}', "results[0] is not a record"),
    ('[1, 2]', "expected an object with a 'results' list"),
])
def test_a_bad_whatif_json_names_the_file_and_the_problem(tmp_path, content, problem):
    from autoprof.analysis import TraceError

    (tmp_path / "whatif.json").write_text(content)
    with pytest.raises(TraceError) as err:
        read_whatif(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'whatif.json'}: ")
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_a_bad_whatif_json_leaves_the_rest_of_the_summary_readable():
    run = autoprof.check(lambda x: x * 2, torch.ones(2))
    (Path(run.path) / "whatif.json").write_text("{not json")
    fresh = autoprof.load(run.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = fresh.summary()
    assert summary["whatif"] == [] and summary["verdict"] == "cpu-only"
    assert any("whatif.json: not valid JSON" in str(w.message) for w in caught)


def test_writer_and_reader_agree_on_the_file_name_and_version():
    from autoprof.analysis.loader import whatif as reader
    from autoprof.runfolder import whatif as writer

    assert writer.WHATIF_NAME == reader.WHATIF_NAME == "whatif.json"
    assert writer.WHATIF_SCHEMA_VERSION == reader.WHATIF_SCHEMA_VERSION


def test_best_fix_skips_changed_outputs_and_slower_fixes():
    from autoprof.analysis.loader.whatif import best_fix

    results = [
        {"fix": "bf16", "applicable": True, "status": "outputs differ", "speedup": None,
         "measured_speedup": 9.0, "outputs_match": False},
        {"fix": "compile", "applicable": True, "status": "faster", "speedup": 2.0,
         "outputs_match": True},
        {"fix": "cuda-graph", "applicable": True, "status": "faster", "speedup": 3.0,
         "outputs_match": None},
        {"fix": "channels-last", "applicable": True, "status": "slower", "speedup": 0.5,
         "outputs_match": True},
    ]
    assert best_fix(results)["fix"] == "cuda-graph"
    assert best_fix(results[:1] + results[3:]) is None


def test_a_fixed_run_recorded_without_the_analysis_gets_its_verdict_when_read():
    """On a torch-only machine the profiled fix is written but not analysed: the reader
    analyses it (and refuses a fixed_run outside the run folder)."""
    from autoprof.analysis.analysis import whatif_or_warn
    from autoprof.runfolder.whatif import whatif_record, write_whatif

    run = autoprof.check(lambda x: x * 2, torch.ones(2))
    fixed = autoprof.check(lambda x: x * 3, torch.ones(2))
    run_dir = Path(run.path)
    inside = run_dir / "whatif" / "f.compile"
    inside.parent.mkdir()
    Path(fixed.path).rename(inside)
    base = {"applicable": True, "status": "faster", "speedup": 2.0, "outputs_match": True}
    write_whatif(run_dir, whatif_record([
        {"fix": "compile", **base, "fixed_run": "whatif/f.compile", "fixed_verdict": None},
        {"fix": "bf16", **base, "fixed_run": "../elsewhere", "fixed_verdict": None},
    ]))
    compiled, escaped = whatif_or_warn(run_dir)
    assert compiled["fixed_verdict"] == "cpu-only" and compiled["fixed_verdict_reason"]
    assert escaped["fixed_verdict"] is None and "outside the run folder" in escaped[
        "fixed_verdict_reason"]


def _skip_the_sleep_fix():
    """A stand-in fix, measurably faster on CPU without compiling anything."""
    from autoprof.record.whatif.fixes import Applied, Fix

    def apply(call):
        return Applied(lambda x, sleep_s: call.fn(x, 0.0))

    return Fix("skip-sleep", "drops the function's sleep", lambda call: None, apply)


def _sleepy(x, sleep_s):
    import time

    time.sleep(sleep_s)
    return x * 2


def test_the_best_fix_is_profiled_beside_the_run(monkeypatch):
    from autoprof.record.whatif import fixes

    monkeypatch.setitem(fixes.FIXES, "skip-sleep", _skip_the_sleep_fix())
    fn = autoprof_decorator(name="sleepy", warmup=0, schedule=TINY)(_sleepy)
    run = autoprof.check(fn, torch.ones(2), 0.002, try_fixes=("skip-sleep",))
    (r,) = run.summary()["whatif"]
    assert r["status"] == "faster" and r["speedup_low"] > 1 and r["outputs_match"] is True
    assert r["baseline_us"] >= 2000 > r["fixed_us"]
    assert r["fixed_run"].startswith("whatif/sleepy.skip-sleep/")
    assert r["fixed_verdict"] == "cpu-only"
    fixed = autoprof.load(Path(run.path) / r["fixed_run"])
    assert fixed.manifest["options"]["try_fixes"] is None  # no what-if of the what-if


def test_a_fixed_run_that_cannot_be_analysed_still_leaves_the_results(monkeypatch):
    from autoprof.analysis import Run
    from autoprof.record.whatif import fixes

    def broken_verdict(self, rank=None):
        raise RuntimeError("analysis bug")

    monkeypatch.setitem(fixes.FIXES, "skip-sleep", _skip_the_sleep_fix())
    fn = autoprof_decorator(name="sleepy", warmup=0, schedule=TINY)(_sleepy)
    monkeypatch.setattr(Run, "verdict", broken_verdict)
    run = autoprof.check(fn, torch.ones(2), 0.002, try_fixes=("skip-sleep",))
    (r,) = read_whatif(run.path)
    assert r["status"] == "faster" and r["fixed_verdict"] is None
    assert r["fixed_verdict_reason"] == "the fixed run could not be analysed: analysis bug"


def test_the_report_says_what_each_findings_fix_measured():
    run = autoprof.check(lambda x: x * 2, torch.ones(2))
    summary = run.summary()
    summary["whatif"] = [
        {"fix": "compile", "applicable": True, "status": "faster", "baseline_us": 90.0,
         "fixed_us": 30.0, "speedup": 3.0, "speedup_low": 2.8, "speedup_high": 3.2,
         "outputs_match": True, "max_abs_error": 0.0, "setup_s": 2.5, "break_even_calls": 41667,
         "settle": None, "suggested_by": ["cpu-only"]},
        {"fix": "cuda-graph", "applicable": False, "status": "not applicable",
         "reason": "no CUDA device", "suggested_by": ["cpu-only"]},
    ]
    text = render_summary(Report.from_dict(summary))
    block = text[text.index("WHAT-IF"):]
    assert ("cpu-only: suggests compile; measured: faster, 3.00x (95% CI 2.80-3.20x), "
            "outputs match") in block
    assert "cpu-only: suggests cuda-graph; measured: not applicable: no CUDA device" in block
    row = next(line for line in block.splitlines() if line.lstrip().startswith("compile"))
    assert "3.00x (2.80-3.20)" in row and "90 µs -> 30 µs" in row and "41,667 calls" in row


def test_each_fix_is_announced_as_it_is_measured(caplog):
    import logging

    caplog.set_level(logging.INFO, logger="autoprof")
    autoprof.check(lambda x: x * 2, torch.ones(2), try_fixes=("cuda-graph", "bf16"))
    notes = [r.getMessage() for r in caplog.records if "what-if" in r.getMessage()]
    assert notes[0] == "autoprof: what-if cuda-graph: not applicable: no CUDA device"
    assert notes[1].startswith("autoprof: what-if bf16: ") and len(notes) == 2


def test_whatif_json_is_strict_json_even_with_an_infinite_error(tmp_path):
    from autoprof.runfolder.whatif import whatif_record, write_whatif

    write_whatif(tmp_path, whatif_record([{"fix": "bf16", "applicable": True,
                                           "max_abs_error": float("inf")}]))
    text = (tmp_path / "whatif.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    assert read_whatif(tmp_path)[0]["max_abs_error"] is None


def test_named_fixes_are_timed_before_the_profile_auto_after_it():
    seen = []

    def f(x):
        seen.append(torch.autograd._profiler_enabled())
        return x * 2

    run = autoprof.check(f, torch.ones(2), try_fixes=("bf16",))
    record = json.loads((Path(run.path) / "whatif.json").read_text())
    assert record["measured"] == "before profiling"
    first_profiled = seen.index(True)
    assert first_profiled > 20  # every what-if call came before the profiler's first step
    assert record["warmup_call_us_median"] > 0

    run = autoprof.check(lambda x: x * 2, torch.ones(2), try_fixes="auto")
    record = json.loads((Path(run.path) / "whatif.json").read_text())
    assert record["measured"] == "after profiling"
    assert "note" not in record  # a CPU run: no CUPTI, nothing to warn of


def test_a_gpu_baseline_slower_after_profiling_is_called_out(tmp_path):
    from support.manifests import write_manifest

    from autoprof.record.whatif.harness import Timing
    from autoprof.record.whatif.runner import Measured, _when

    write_manifest(tmp_path, warmup_call_ms=[2.2, 2.3, 2.5])
    slow = Timing(4100.0, 4000.0, 4200.0, (4100.0,), 1, "cuda-events")
    about = _when(Measured(["cuda-graph"], slow, [], after_profiling=True), tmp_path)
    assert about["warmup_call_us_median"] == pytest.approx(2300.0)
    assert "CUPTI stays attached" in about["note"] and "4.1 ms" in about["note"]
    assert "note" not in _when(Measured(["cuda-graph"], slow, [], after_profiling=False),
                               tmp_path)
    same = Timing(2400.0, 2300.0, 2500.0, (2400.0,), 1, "cuda-events")
    assert "note" not in _when(Measured(["cuda-graph"], same, [], after_profiling=True),
                               tmp_path)
