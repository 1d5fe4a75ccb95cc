"""A triggered window fits ``Watch.max_trace_mb``: its schedule is cut to the steps the
healthy window's trace per step says fit, its manifest says so under ``budget``, and the
trace it writes is within the budget (its real, uncompressed size); a budget below one step
records no window at all."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest
import torch

from autoprof import autoprof
from autoprof import load as autoload
from autoprof.analysis.report.text import render_summary
from autoprof.record.options import Schedule
from autoprof.record.watch import Watch, budget
from tests.core.conftest import manifest, run_dirs

MB = 1024 * 1024


def _uncompressed_bytes(run_dir: Path) -> int:
    return sum(len(gzip.decompress(p.read_bytes())) for p in run_dir.glob("*.pt.trace.json.gz"))


def _watched(root: Path, name: str, max_trace_mb: float, calls: int = 60):
    w = torch.randn(32, 32)

    @autoprof(name=name, activities=["cpu"],
              watch={"at_calls": [30], "max_trace_mb": max_trace_mb})
    def f(x):
        return (x @ w).relu().sum()

    x = torch.randn(32, 32)
    for _ in range(calls):
        f(x)
    autoprof.flush()
    for window in f.autoprof_session.watcher.opened:
        window.flush()
    return sorted(run_dirs(root, name), key=lambda r: manifest(r)["started_at"])


def test_the_window_is_cut_to_the_budget_and_its_trace_fits(traces_root):
    healthy = _watched(traces_root, "roomy", 256.0)[0]  # its trace per step, measured
    per_step = _uncompressed_bytes(healthy) / manifest(healthy)["steps_recorded"]
    max_mb = 1.6 * per_step / MB  # one step fits (a step's size varies by a few percent)
    healthy, triggered = _watched(traces_root, "tight", max_mb)
    fitted = manifest(triggered)["budget"]
    assert fitted["asked_active"] == 3 and fitted["active"] == 1
    assert fitted["max_host_mb"] == 4096.0 and fitted["predicted_host_mb"] > 0
    assert fitted["from_run"] == healthy.name == manifest(triggered)["trigger"]["healthy_run_id"]
    assert manifest(triggered)["steps_recorded"] == 1
    assert _uncompressed_bytes(triggered) <= max_mb * MB  # the budget held, on the real trace
    # the prediction against the window's real trace: within 25%, give or take the trace's
    # fixed part (its metadata: 1.4 KiB on a small CPU trace; 4 KiB allowed), which the
    # per-step model spreads over the healthy window's steps: it weighs on this tiny CPU
    # step, not on a real one
    fixed_bytes = 4096
    assert abs(fitted["predicted_trace_mb"] * MB - _uncompressed_bytes(triggered)) <= \
        0.25 * _uncompressed_bytes(triggered) + fixed_bytes


def test_a_budget_below_one_step_records_no_window(traces_root, caplog):
    caplog.set_level(logging.INFO, logger="autoprof")
    runs = _watched(traces_root, "too_small", 1e-6)
    assert len(runs) == 1 and "trigger" not in manifest(runs[0])
    assert "records no triggered window" in caplog.text


def test_fit_cuts_active_then_repeat():
    schedule = Schedule(wait=1, warmup=1, active=4, repeat=3)
    kept = budget.fit(schedule, 10.0, None, "r")
    assert (kept.active, kept.repeat, kept.predicted_trace_mb) == (4, 3, None)
    cut = budget.fit(schedule, 10.0, 3 * MB, "r")  # 3 steps fit: 3 active x 1 cycle
    assert (cut.active, cut.repeat) == (3, 1) and cut.predicted_trace_mb == 9.0
    some = budget.fit(schedule, 10.0, 1.2 * MB, "r")  # 8 steps fit: 4 active x 2 cycles
    assert (some.active, some.repeat) == (4, 2)
    assert not budget.fit(schedule, 1.0, 2 * MB, "r").fits
    # the trace's budget holds 100 steps, the host memory's 10: 4 active x 2 cycles
    host = budget.fit(schedule, 100.0, 1 * MB, "r", max_host_mb=10 * budget.HOST_PER_TRACE)
    assert (host.active, host.repeat) == (4, 2)
    assert host.predicted_host_mb == 8 * budget.HOST_PER_TRACE
    assert budget.fitted_schedule(schedule, kept) is schedule
    assert budget.fitted_schedule(schedule, some) == Schedule(wait=1, warmup=1, active=4,
                                                              repeat=2)


def test_bytes_per_step_reads_gzip_trailers_and_raw_traces(tmp_path):
    (tmp_path / "w.1.pt.trace.json.gz").write_bytes(gzip.compress(b"x" * 3000))
    (tmp_path / ".w.2.pt.trace.json.raw").write_bytes(b"y" * 1000)
    (tmp_path / "table.txt").write_text("not a trace")
    assert budget.bytes_per_step(tmp_path, 4) == 1000.0
    assert budget.bytes_per_step(tmp_path, 0) is None
    assert budget.bytes_per_step(tmp_path / "gone", 4) is None


@pytest.mark.parametrize("bad", [0, -1.0, True, "big"])
@pytest.mark.parametrize("key", ["max_trace_mb", "max_host_mb"])
def test_a_bad_budget_is_refused(key, bad):
    with pytest.raises(ValueError, match=key):
        Watch(**{key: bad})


def _first_window(root: Path, name: str, max_trace_mb: float, ops: int = 500):
    x = torch.ones(4)

    @autoprof(name=name, activities=["cpu"], warmup_calls=1,
              schedule=dict(wait=0, warmup=1, active=8),
              watch={"max_trace_mb": max_trace_mb, "signal": False})
    def f():
        y = x
        for _ in range(ops):  # about 1 MB of trace a step
            y = y + 1
        return y

    for _ in range(14):
        f()
    autoprof.flush()
    (run,) = run_dirs(root, name)
    return run


def test_the_first_window_is_fitted_from_its_first_recorded_step(traces_root, caplog):
    caplog.set_level(logging.INFO, logger="autoprof")
    roomy = _first_window(traces_root, "first_roomy", 256.0)
    per_step = _uncompressed_bytes(roomy) / manifest(roomy)["steps_recorded"]
    assert manifest(roomy)["steps_recorded"] == 8  # the budget holds the whole schedule
    assert manifest(roomy)["budget"]["basis"] == "first_step"
    assert manifest(roomy)["budget"]["why"] is None
    max_mb = 3.5 * per_step / MB  # room for about three steps of this size
    run = _first_window(traces_root, "first_tight", max_mb)
    m = manifest(run)
    fitted = m["budget"]
    assert m["status"] == "complete" and 1 <= m["steps_recorded"] < 8, m
    assert (fitted["basis"], fitted["asked_active"]) == ("first_step", 8)
    assert fitted["active"] == m["steps_recorded"] and "max_trace_mb=" in fitted["why"]
    assert fitted["first_step_host_mb"] > 0
    assert "window ends after" in caplog.text
    # the budget held on the real trace, give or take its fixed part (4 KiB: docs/watch.md)
    assert _uncompressed_bytes(run) <= max_mb * MB + 4096
    # the prediction is an upper bound (TRACE_PER_HEAP rounded up), within twice the truth
    predicted = fitted["predicted_trace_mb"] * MB
    assert _uncompressed_bytes(run) - 4096 <= predicted <= 2 * _uncompressed_bytes(run)
    loaded = autoload(run)
    assert loaded.record is not None and loaded.record.window_budget == fitted
    text = render_summary(loaded.report())  # the summary says what was fitted and why
    assert "window-fitted" in text and f"{fitted['active']} of 8 active steps" in text


def test_a_first_window_over_the_budget_keeps_its_one_measured_step(traces_root):
    run = _first_window(traces_root, "first_tiny", 0.01)
    m = manifest(run)
    assert m["status"] == "complete" and m["steps_recorded"] == 1
    assert "not even one step fits" in m["budget"]["why"]


def test_a_trace_is_counted_once_while_the_finisher_compresses_it(tmp_path):
    """The finisher writes the gzip whole, reads it back, then removes the raw trace: for a
    while both are there, and the trace per step must not double (a window would then be
    refused as over its budget)."""
    from autoprof import runfolder

    final = tmp_path / "w.1.pt.trace.json.gz"
    raw = tmp_path / runfolder.raw_trace_name(final.name)
    body = b"x" * 3000
    raw.write_bytes(body)
    assert budget.bytes_per_step(tmp_path, 3) == 1000  # raw only: not compressed yet
    final.write_bytes(gzip.compress(body))
    assert budget.bytes_per_step(tmp_path, 3) == 1000  # both: counted once
    raw.unlink()
    assert budget.bytes_per_step(tmp_path, 3) == 1000  # the gzip alone
