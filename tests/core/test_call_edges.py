"""Calls that surprised first users: deep recursion, generators and coroutines, a chdir in the
middle of a run, autoprof's own device syncs, and what autoprof says about a run."""

from __future__ import annotations

import asyncio
import gzip
import inspect
import json
import logging
import os
import sys
import warnings
from pathlib import Path

import pytest
import torch

from autoprof import autoprof
from autoprof.record import export as _export
from autoprof.record.session import driver
from tests.core.conftest import manifest, only_run, trace_files


def _plain(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


def _depth_that_fits(decorate) -> int:
    """The deepest recursion that runs under ``decorate`` at the current recursion limit."""

    def make():
        @decorate
        def down(n: int) -> int:
            return 0 if n == 0 else 1 + down(n - 1)

        return down

    lo, hi = 1, sys.getrecursionlimit()
    while lo < hi:  # binary search on a fresh plain function each time
        mid = (lo + hi + 1) // 2
        try:
            make()(mid)
            lo = mid
        except RecursionError:
            hi = mid - 1
    return lo


@pytest.mark.parametrize("calls_before", [0, 3, 5])  # in warm-up, in the wait step, recording
def test_recursion_that_works_under_a_plain_wrapper_works_under_autoprof(calls_before):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(600)
    try:
        depth = _depth_that_fits(_plain) - 12  # room for the profiler's own calls at the bottom

        @autoprof(name=f"down{calls_before}", warmup=3, schedule=dict(wait=1, warmup=1, active=3))
        def down(n: int) -> int:
            return 0 if n == 0 else 1 + down(n - 1)

        for _ in range(calls_before):
            down(2)
        assert down(depth) == depth
    finally:
        sys.setrecursionlimit(old)
        down.autoprof_session.flush()  # type: ignore[attr-defined]


def _gen():
    yield 1


async def _coro():
    return 1


async def _agen():
    yield 1


@pytest.mark.parametrize("fn, what", [(_gen, "generator function"),
                                      (_coro, "coroutine"),
                                      (_agen, "async generator")])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_generators_and_coroutines_are_refused_clearly(monkeypatch, fn, what, switch):
    monkeypatch.setenv("AUTOPROF", switch)  # the same answer whether autoprof is on or off
    with pytest.raises(TypeError, match=f"{what}.*region"):
        autoprof(fn)
    with pytest.raises(TypeError, match=what):
        autoprof(name="x")(fn)
    assert asyncio.run(_coro()) == 1 and list(_gen()) == [1]  # the functions themselves


def test_a_chdir_during_a_run_keeps_it_in_the_folder_it_started_in(tmp_path, monkeypatch):
    start, elsewhere = tmp_path / "start", tmp_path / "elsewhere"
    start.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(start)
    monkeypatch.setenv("AUTOPROF_DIR", "traces")  # relative: resolved when the run starts

    @autoprof(name="moves", warmup=0, schedule=dict(wait=0, warmup=1, active=2))
    def f(x):
        return x + 1

    f(torch.ones(1))
    os.chdir(elsewhere)
    for _ in range(2):
        f(torch.ones(1))
    f.autoprof_session.flush()  # type: ignore[attr-defined]
    run = only_run(start / "traces", "moves")
    assert manifest(run)["status"] == "complete" and len(trace_files(run)) == 1
    assert not (elsewhere / "traces").exists()


def _trace_events(run: Path) -> list[dict]:
    (trace,) = trace_files(run)
    with gzip.open(trace, "rt") as fh:
        return [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]


@pytest.fixture
def cuda_run(monkeypatch):
    """A run that believes it records CUDA (on a CPU machine): every torch.cuda.synchronize
    call is logged with the file that made it."""
    calls: list[str] = []

    def synchronize(device=None):
        calls.append(inspect.stack()[1].filename)

    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    monkeypatch.setattr(driver, "device_info", lambda uses_cuda: None)
    warnings.filterwarnings("ignore", message="CUDA is not available")
    return calls


def test_autoprof_makes_no_device_sync_of_its_own_in_a_run(cuda_run, traces_root):
    @autoprof(name="nosync", warmup=0, activities=["cpu", "cuda"],
              schedule=dict(wait=0, warmup=1, active=2))
    def f(x):
        return x * 2

    for _ in range(3):
        f(torch.ones(2))
    f.autoprof_session.flush()  # type: ignore[attr-defined]
    assert manifest(only_run(traces_root, "nosync"))["status"] == "complete"
    ours = [c for c in cuda_run if os.path.join("autoprof", "record", "session") in c]
    assert ours == []  # torch syncs the device itself when a trace stops, outside any step


def test_the_sync_option_is_labelled_as_autoprofs_own(cuda_run, traces_root):
    @autoprof(name="synced", warmup=0, activities=["cpu", "cuda"], sync=True,
              schedule=dict(wait=0, warmup=1, active=2))
    def f(x):
        return x * 2

    for _ in range(3):
        f(torch.ones(2))
    f.autoprof_session.flush()  # type: ignore[attr-defined]
    events = _trace_events(only_run(traces_root, "synced"))
    labels = [e for e in events if e["name"] == "autoprof::sync"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    assert len(labels) == len(steps) == 2  # one per recorded step, each under our label


def test_a_run_says_where_it_went_and_its_status(caplog, traces_root):
    caplog.set_level(logging.INFO, logger="autoprof")

    @autoprof(name="told", warmup=0, schedule=dict(wait=0, warmup=1, active=3))
    def f(x):
        return x

    for _ in range(2):
        f(torch.ones(1))
    f.autoprof_session.flush()  # type: ignore[attr-defined]
    run = only_run(traces_root, "told")
    (line,) = [r.getMessage() for r in caplog.records if "run of" in r.getMessage()]
    assert line == ("autoprof: run of 'told' recorded partially (1 of 3 steps: called 2 "
                    "times; the schedule needs 0 warm-up calls + wait 0 + warmup 1 + active 3 "
                    "= 4 calls: pass warmup_calls=0, schedule=dict(wait=0, warmup=1, "
                    f"active=1) or call it more); finishing in the background: {run}")


def test_the_end_of_a_run_says_what_was_recorded_not_a_status_not_yet_decided(
        caplog, traces_root):
    caplog.set_level(logging.INFO, logger="autoprof")

    @autoprof(name="whole", warmup=0, schedule=dict(wait=0, warmup=1, active=2))
    def f(x):
        return x

    for _ in range(3):
        f(torch.ones(1))
    f.autoprof_session.flush()  # type: ignore[attr-defined]
    run = only_run(traces_root, "whole")
    (line,) = [r.getMessage() for r in caplog.records if "run of" in r.getMessage()]
    assert line == f"autoprof: run of 'whole' recorded (2 steps); finishing in the " \
                   f"background: {run}"  # the profiler's warm-up call is not a step
    assert "complete" not in line  # the finisher decides that, after this line


def test_a_slow_profiler_start_is_noted(caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger="autoprof")
    monkeypatch.setattr(driver, "SLOW_START_S", 0.0)  # every start counts as slow

    @autoprof(name="slow_start", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f(x):
        return x

    f(torch.ones(1))
    f(torch.ones(1))
    notes = [m for m in (r.getMessage() for r in caplog.records)
             if "to start for 'slow_start'" in m]
    assert len(notes) == 1 and "calls before its first recorded step waited" in notes[0]


def test_a_run_no_finisher_took_says_how_to_finish_it(caplog, monkeypatch, traces_root):
    caplog.set_level(logging.INFO, logger="autoprof")
    def cannot_start(*args: object) -> None:
        raise OSError("no processes left")

    monkeypatch.setattr(_export.Finisher, "start", cannot_start)

    @autoprof(name="orphan", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f(x):
        return x

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for _ in range(2):
            f(torch.ones(1))
        f.autoprof_session.flush()  # type: ignore[attr-defined]
    run = only_run(traces_root, "orphan")
    (line,) = [r.getMessage() for r in caplog.records if "run of" in r.getMessage()]
    assert line == (f"autoprof: run of 'orphan' recorded (1 step); left 'recording' "
                    f"for `python -m autoprof.finish`: {run}")
    assert any("cannot start the finisher" in str(w.message) for w in said)  # still warned
