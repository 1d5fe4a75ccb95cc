"""Watched functions record again, for real (CPU, torch.profiler): a slowdown injected at call
N of a loop starts a window within 100 calls of N whose summary leads with the comparison
against the healthy window and names the injected op; a call number starts one at that
call; the triggered run is a folder beside the first, its manifest saying why."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import autoprof as package
from autoprof import autoprof
from autoprof.analysis.report.schema import validate_summary
from autoprof.cli import main
from tests.core.conftest import manifest, run_dirs

WINDOW_CALLS = 3 + 6  # the default warm-up calls and schedule (1 wait, 2 warm-up, 3 active)
SLOW_AT = 150  # the first slow call


def _loop_with_a_slowdown(name: str, calls: int):
    """A loop whose function does one more, large op (a cumsum) from call SLOW_AT on."""
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    big = torch.randn(2_000_000)
    count = [0]

    @autoprof(name=name, activities=["cpu"],
              watch={"threshold_pct": 100.0, "drift_calls": 10, "baseline_calls": 30})
    def step(x):
        count[0] += 1
        y = x @ w
        if count[0] >= SLOW_AT:
            y = y + big.cumsum(0)[:1]
        return y

    for _ in range(calls):
        step(x)
    return step


def _runs(root, name):
    """The function's run folders in the order they were recorded (two run ids of one second
    sort by their random part)."""
    return sorted(run_dirs(root, name), key=lambda r: manifest(r)["started_at"])


def _only_shifts_or_escalations(later) -> None:
    """Windows after the first triggered one: on a loaded machine the slow step can settle at
    a level well above the one that triggered (other work taking the cores), which the
    watcher records by its rules after a window; nothing else begins one here."""
    for run in later:
        assert manifest(run)["trigger"]["rule"] in ("shift", "escalation")


def _flush_all(fn) -> None:
    autoprof.flush()
    for window in fn.autoprof_session.watcher.opened:
        window.flush()


def test_a_slowdown_is_recorded_within_100_calls_and_named(traces_root, capsys):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # intra-op threads spinning on 2 shared cores slow every op
    try:
        fn = _loop_with_a_slowdown("slowdown", SLOW_AT + 120)
    finally:
        torch.set_num_threads(threads)
    _flush_all(fn)
    healthy, triggered, *later = _runs(traces_root, "slowdown")  # the second beside the first
    _only_shifts_or_escalations(later)
    trigger = manifest(triggered)["trigger"]
    assert trigger["kind"] == "drift" and trigger["healthy_run_id"] == healthy.name
    # the window's recorded steps all fall within 100 calls of the first slow one
    assert SLOW_AT <= trigger["at_call"] and trigger["at_call"] + WINDOW_CALLS <= SLOW_AT + 100
    assert trigger["current_ms"] > 2 * trigger["baseline_ms"] > 0
    assert manifest(triggered)["status"] == "complete" and "trigger" not in manifest(healthy)
    capsys.readouterr()
    assert main(["summary", str(triggered), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    validate_summary(summary)
    assert next(iter(summary)) == "comparison"  # it leads
    compared = summary["comparison"]
    assert compared["problem"] is None and compared["trigger"]["at_call"] == trigger["at_call"]
    # how much slower, from the watcher's own step times: the calls behind the trigger
    untraced = compared["untraced"]
    assert compared["verdict"] == untraced["verdict"] == "slower"
    assert untraced["samples_before"] == 30 and untraced["samples_after"] == 10
    # the very calls behind the trigger's two medians (rounded to µs)
    assert untraced["after_ms"] == pytest.approx(trigger["current_ms"], rel=0.01, abs=1e-3)
    assert untraced["before_ms"] == pytest.approx(trigger["baseline_ms"], rel=0.01, abs=1e-3)
    # the why: the profiled steps' diff (its own verdict, on 3 steps a side, may not tell)
    assert "cumsum" in compared["why"][0]["name"]  # the injected op is the first cause
    assert compared["diff"]["ops"]
    assert main(["summary", str(triggered)]) == 0
    text = capsys.readouterr().out
    lead = text.split("autoprof summary")[0]
    assert text.startswith("TRIGGERED WINDOW 1") and "cumsum" in lead
    assert lead.splitlines()[1].strip().startswith("VERDICT: slower (the untraced step time")


def test_a_slower_loader_is_recorded_within_100_calls_and_named(traces_root, capsys):
    """The slowdown between the calls (the loop's loader), not in them: the comparison's
    largest change is the untraced host time between the steps."""
    import time

    w = torch.randn(64, 64)

    @autoprof(name="loader", activities=["cpu"],
              watch={"threshold_pct": 300.0, "drift_calls": 10, "baseline_calls": 30})
    def step(x):
        time.sleep(0.003)  # a 3 ms step: a loaded machine's scheduler noise is no drift
        return x @ w

    x = torch.randn(64, 64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # intra-op threads spinning on 2 shared cores slow every op
    try:
        for call in range(1, SLOW_AT + 120):
            if call >= SLOW_AT:
                time.sleep(0.02)  # the loader takes 20 ms more before each call
            step(x)
    finally:
        torch.set_num_threads(threads)
    _flush_all(step)
    healthy, triggered, *later = _runs(traces_root, "loader")
    _only_shifts_or_escalations(later)
    trigger = manifest(triggered)["trigger"]
    assert trigger["kind"] == "drift"
    assert SLOW_AT <= trigger["at_call"] and trigger["at_call"] + WINDOW_CALLS <= SLOW_AT + 100
    capsys.readouterr()
    assert main(["summary", str(triggered), "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)["comparison"]
    assert compared["verdict"] == "slower", compared["untraced"]
    result = compared["diff"]
    largest = max(result["buckets"], key=lambda b: b["delta_us_per_step"])
    assert largest["name"] == "host_untraced" and largest["share_of_change_pct"] > 50


def test_a_call_number_records_at_that_call_and_the_count_holds(traces_root):
    calls = []

    @autoprof(name="at_call", activities=["cpu"], watch={"at_calls": [40, 70]})
    def f(x):
        calls.append(1)
        return x * 2

    x = torch.ones(4)
    for _ in range(100):
        assert torch.equal(f(x), x * 2)
    watcher = f.autoprof_session.watcher
    assert watcher.calls == len(calls) == 100  # every call counted, the windows' too
    _flush_all(f)
    healthy, first, second = _runs(traces_root, "at_call")
    assert [manifest(r)["trigger"]["at_call"] for r in (first, second)] == [40, 70]
    assert [manifest(r)["trigger"]["window"] for r in (first, second)] == [1, 2]
    assert all(manifest(r)["steps_recorded"] == 3 for r in (healthy, first, second))


def test_a_summary_whose_healthy_window_is_gone_says_so(traces_root, capsys):
    @autoprof(name="gone", activities=["cpu"], watch={"at_calls": [20]})
    def f(x):
        return x + 1

    for _ in range(40):
        f(torch.ones(2))
    _flush_all(f)
    healthy, triggered = _runs(traces_root, "gone")
    shutil.rmtree(healthy)
    capsys.readouterr()
    assert main(["summary", str(triggered), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    validate_summary(summary)
    compared = summary["comparison"]
    assert compared["diff"] is None and "not there" in compared["problem"]


def test_without_watch_nothing_is_watched(traces_root):
    @autoprof(name="plain", activities=["cpu"])
    def f(x):
        return x

    for _ in range(30):
        f(1)
    assert not hasattr(f.autoprof_session, "watcher")
    assert f.__code__.co_code != f.autoprof_session.__class__.__init__.__code__.co_code


def test_autoprof_trigger_records_at_the_next_call_and_errors_stay_the_programs(traces_root):
    @autoprof(name="manual", activities=["cpu"], watch=True)
    def f(x, fail=False):
        if fail:
            raise KeyError("mine")
        return x + 1

    for _ in range(20):
        f(1)
    with pytest.raises(KeyError, match="mine"):  # a watched call raises the program's own
        f(1, fail=True)
    assert package.trigger("manual") == 1
    with pytest.warns(package.AutoprofWarning, match="no watched function 'nobody'"):
        assert package.trigger("nobody") == 0
    for _ in range(20):
        assert f(1) == 2
    _flush_all(f)
    healthy, triggered = _runs(traces_root, "manual")
    trigger = manifest(triggered)["trigger"]
    assert trigger["kind"] == "manual" and trigger["at_call"] == 22
    assert trigger["healthy_run_id"] == healthy.name


def test_a_watched_region_records_again_at_a_call_number(traces_root):
    x = torch.ones(4)
    for _ in range(60):
        with package.region("watched_region", activities=["cpu"], watch={"at_calls": [30]}):
            x = x * 1.0
    from autoprof.record.decorator import _regions

    watcher = _regions["watched_region"].watcher
    assert watcher.calls == 60 and watcher.windows == 1
    package.flush()
    for window in watcher.opened:
        window.flush()
    healthy, triggered = _runs(traces_root, "watched_region")
    trigger = manifest(triggered)["trigger"]
    assert trigger["kind"] == "call" and trigger["at_call"] == 30
    assert trigger["healthy_run_id"] == healthy.name
    assert manifest(triggered)["steps_recorded"] == 3


def test_a_window_whose_call_raises_fails_and_watching_goes_on(traces_root):
    calls = []

    @autoprof(name="raises", activities=["cpu"], watch={"at_calls": [20, 40]})
    def f(x):
        calls.append(1)
        if len(calls) == 25:  # inside the first triggered window's schedule
            raise ValueError("the program's own")
        return x

    for i in range(60):
        if i + 1 == 25:
            with pytest.raises(ValueError, match="the program's own"):
                f(1)
        else:
            assert f(1) == 1
    _flush_all(f)
    healthy, failed, second = _runs(traces_root, "raises")
    assert manifest(failed)["status"] == "failed"
    assert manifest(failed)["trigger"]["at_call"] == 20
    assert manifest(second)["trigger"]["at_call"] == 40
    assert manifest(second)["status"] == "complete"


def test_a_watched_region_nested_in_itself_and_raising_keeps_its_pairs(traces_root):
    def enter():
        return package.region("nested_region", activities=["cpu"], watch={"at_calls": [20]})

    for i in range(40):
        with enter():
            with enter():  # nested inside itself: its label only, in the window too
                pass
            if i == 25:
                try:
                    with enter():
                        raise KeyError("mine")
                except KeyError:
                    pass
    from autoprof.record.decorator import _regions

    region = _regions["nested_region"]
    assert region._open == 0 and not getattr(region._local, "stack", [])
    package.flush()
    for window in region.watcher.opened:
        window.flush()
    healthy, triggered = _runs(traces_root, "nested_region")
    assert manifest(triggered)["trigger"]["kind"] == "call"
