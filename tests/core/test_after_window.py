"""The first calls after the profiling window are timed like warm-up calls and reach the
finished manifest as ``after_window_call_ms``, through the finisher (which holds the folder
while it works), without changing the run's status or anything else it wrote."""

from __future__ import annotations

import json
import os
import time

import torch

from autoprof import autoprof
from autoprof.record.finisher.after_window import Pipe, record_after_window
from autoprof.record.options import Schedule
from autoprof.record.session import State
from autoprof.record.session.after_window import AFTER_WINDOW_CALLS
from autoprof.runfolder import Manifest, write_manifest
from tests.core.conftest import manifest, only_run

SLOW_S = 0.03
WINDOW_CALLS = 3 + Schedule().total_steps  # the default warm-up calls, then its schedule


def _slow_call(which: int):
    """A step whose call number ``which`` (counting from 0) sleeps SLOW_S."""
    calls = []

    def work(x):
        if len(calls) == which:
            time.sleep(SLOW_S)
        calls.append(1)
        return x + 1

    return work


def test_the_calls_after_the_window_are_timed_in_order(traces_root):
    fn = autoprof(name="after")(_slow_call(WINDOW_CALLS + 1))  # the second call after it
    x = torch.ones(3)
    for _ in range(WINDOW_CALLS):
        assert torch.equal(fn(x), x + 1)
    session = fn.autoprof_session
    assert session.state is State.AFTER  # the window ended: the next calls are timed
    for _ in range(AFTER_WINDOW_CALLS + 2):
        assert torch.equal(fn(x), x + 1)  # the function's own result, timed or not
    assert session.state is State.DONE  # then the plain pass-through
    session.flush()
    m = manifest(only_run(traces_root, "after"))
    assert m["status"] == "complete" and m["steps_recorded"] == 3
    after_ms = m["after_window_call_ms"]
    assert len(after_ms) == AFTER_WINDOW_CALLS
    assert after_ms[1] >= SLOW_S * 1e3
    assert all(0 < t < SLOW_S * 1e3 for i, t in enumerate(after_ms) if i != 1), after_ms
    assert len(m["warmup_call_ms"]) == 3  # the warm-up calls are not among them


def test_a_flush_sends_the_calls_timed_so_far(traces_root):
    fn = autoprof(name="after_flush")(lambda x: x * 2)
    for _ in range(WINDOW_CALLS + 2):
        fn(torch.ones(2))
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "after_flush"))
    assert m["status"] == "complete" and len(m["after_window_call_ms"]) == 2
    assert fn.autoprof_session.state is State.DONE


def test_no_call_after_the_window_leaves_the_list_empty(traces_root):
    fn = autoprof(name="after_none")(lambda x: x * 2)
    for _ in range(WINDOW_CALLS):
        fn(torch.ones(2))
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "after_none"))
    assert m["status"] == "complete" and m["after_window_call_ms"] == []


def test_an_exception_after_the_window_is_the_callers_and_still_timed(traces_root):
    calls = []

    def sometimes(x):
        calls.append(1)
        if len(calls) == WINDOW_CALLS + 1:
            raise KeyError("the user's own")
        return x

    fn = autoprof(name="after_raise")(sometimes)
    for _ in range(WINDOW_CALLS):
        fn(1)
    try:
        fn(1)
    except KeyError as exc:
        assert exc.args == ("the user's own",)
    else:  # pragma: no cover - the test's failure
        raise AssertionError("the exception did not reach the caller")
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "after_raise"))
    assert m["status"] == "complete" and len(m["after_window_call_ms"]) == 1


def _finished(tmp_path, status="complete"):
    record = Manifest(name="f", status=status, run_id="r1", steps_recorded=3,
                      files=("a.pt.trace.json.gz",), extra={"kept": 1})
    write_manifest(tmp_path / "manifest.json", record)
    return record


def test_the_finisher_adds_the_times_and_changes_nothing_else(tmp_path):
    record = _finished(tmp_path)
    read, write = os.pipe()
    os.write(write, json.dumps({"after_window_call_ms": [1.5, 2.0, "x"]}).encode() + b"\n")
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        assert record_after_window(tmp_path, record, Pipe(stream), wait_s=5.0) == (1.5, 2.0)
    after = json.loads((tmp_path / "manifest.json").read_text())
    assert after["after_window_call_ms"] == [1.5, 2.0]
    assert after == {**record.to_dict(), "after_window_call_ms": [1.5, 2.0]}


def test_the_finisher_waits_a_bounded_time_and_leaves_the_record(tmp_path):
    record = _finished(tmp_path)
    before = (tmp_path / "manifest.json").read_bytes()
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb") as stream:
            started = time.monotonic()
            assert record_after_window(tmp_path, record, Pipe(stream), wait_s=0.2) == ()
            assert time.monotonic() - started < 5.0
    finally:
        os.close(write)
    assert (tmp_path / "manifest.json").read_bytes() == before


def test_the_finisher_never_writes_another_runs_record(tmp_path):
    _finished(tmp_path)
    before = (tmp_path / "manifest.json").read_bytes()
    other = Manifest(name="f", run_id="r2")
    read, write = os.pipe()
    os.write(write, b'{"after_window_call_ms": [1.0]}\n')
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        record_after_window(tmp_path, other, Pipe(stream), wait_s=5.0)
    assert (tmp_path / "manifest.json").read_bytes() == before


def test_the_field_reads_tolerantly():
    m = Manifest.from_json({"schema_version": 1, "name": "n",
                            "after_window_call_ms": [1, True, "2", float("nan"), 3.5]}, "m")
    assert m.after_window_call_ms == (1, 3.5)
    assert Manifest.from_json({"schema_version": 1, "name": "n",
                               "after_window_call_ms": "x"}, "m").after_window_call_ms == ()
    assert Manifest(name="n").to_dict()["after_window_call_ms"] == []


def test_torch_profilers_are_freed_as_the_window_ends_not_by_a_later_collection(
        traces_root, monkeypatch):
    """torch's profiler objects sit in a reference cycle: left to the garbage collector, they
    and their events are freed in whatever later call a full collection falls on (seconds at
    tens of thousands of events). Both (the run's, the source-lines step's) are freed by the
    call that ends the window, with the collector off."""
    import gc
    import weakref

    from autoprof.record import lines as lines_mod
    from autoprof.record.session import driver

    made = []
    driver_init, lines_init = driver.Driver.__init__, lines_mod.LinesStep.__init__

    def watched_driver(self, *args, **kwargs):
        driver_init(self, *args, **kwargs)
        made.append(weakref.ref(self._prof))

    def watched_lines(self, *args, **kwargs):
        lines_init(self, *args, **kwargs)
        made.append(weakref.ref(self._prof))

    monkeypatch.setattr(driver.Driver, "__init__", watched_driver)
    monkeypatch.setattr(lines_mod.LinesStep, "__init__", watched_lines)
    schedule = {"wait": 1, "warmup": 2, "active": 3}  # two warm-up steps: the first has lines
    fn = autoprof(name="freed", source_lines=True, schedule=schedule)(lambda x: x @ x)
    gc.disable()
    try:
        for _ in range(3 + 6):
            fn(torch.ones(4, 4))
        assert len(made) == 2 and all(ref() is None for ref in made)
    finally:
        gc.enable()


def test_a_failed_write_of_the_times_leaves_the_finished_run_as_it_was(tmp_path, monkeypatch,
                                                                        capsys):
    """The status was decided before: a full disk (or a lock held too long) when the times
    come costs only the times, never the finisher's exit status (which the session reads)."""
    from autoprof import runfolder

    record = _finished(tmp_path)
    before = (tmp_path / "manifest.json").read_bytes()

    def full(path, manifest):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runfolder, "write_manifest", full)
    read, write = os.pipe()
    os.write(write, b'{"after_window_call_ms": [1.0]}\n')
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        assert record_after_window(tmp_path, record, Pipe(stream), wait_s=5.0) == ()
    assert (tmp_path / "manifest.json").read_bytes() == before
    assert "not recorded" in capsys.readouterr().err


def test_a_region_is_settled_as_its_window_ends(traces_root):
    """Regions are not timed after the window: a finished region costs one dict lookup."""
    import autoprof as api
    from autoprof.record import decorator

    for _ in range(2):
        with api.region("settled", warmup=0, schedule={"wait": 0, "warmup": 1, "active": 1}):
            torch.ones(1)
    assert decorator._settled.get("settled") is True
    assert api.region("settled") is decorator._NULL


def test_a_session_dropped_after_its_window_lets_its_finisher_go(traces_root):
    """A decorated function that goes away after its window (no more calls can come): its
    finisher's pipe closes with it, and the finisher ends."""
    import gc

    fn = autoprof(name="dropped")(lambda x: x * 2)
    for _ in range(WINDOW_CALLS):
        fn(torch.ones(2))
    proc = fn.autoprof_session._finisher.proc
    del fn
    gc.collect()
    assert proc.wait(60) == 0
    m = manifest(only_run(traces_root, "dropped"))
    assert m["status"] == "complete" and m["after_window_call_ms"] == []


# --- the block of calls timed back to back (where the process uses CUDA) -------------------

CALL_S, BETWEEN_S = 0.004, 0.002


def _as_if_cuda(monkeypatch, calls=10, seconds=0.0, most=5000):
    """The session's view of CUDA: in use, each sync counted (CI has no device); the block
    at least ``calls`` calls and ``seconds``, at most ``most`` calls."""
    from autoprof.record.session import after_window as actions

    syncs = []
    monkeypatch.setattr(actions, "cuda_in_use", lambda: True)
    monkeypatch.setattr(actions, "sync_if_cuda_in_use", lambda: syncs.append(1))
    monkeypatch.setattr(actions, "PACE_CALLS", calls)
    monkeypatch.setattr(actions, "PACE_S", seconds)
    monkeypatch.setattr(actions, "PACE_MAX_CALLS", most)
    return syncs


def _sleepy(x):
    time.sleep(CALL_S)
    return x + 1


def _block_calls(fn, x, limit=1000):
    """Calls (each followed by the caller's loop) until the block is read: how many."""
    session = fn.autoprof_session
    n = 0
    while session.state is State.AFTER and n < limit:
        assert torch.equal(fn(x), x + 1)  # the function's own result
        time.sleep(BETWEEN_S)
        n += 1
    return n


def test_with_cuda_a_block_of_calls_times_the_untraced_iteration(traces_root, monkeypatch):
    syncs = _as_if_cuda(monkeypatch, calls=10)
    fn = autoprof(name="pace")(_sleepy)
    x = torch.ones(2)
    for _ in range(WINDOW_CALLS + AFTER_WINDOW_CALLS):
        fn(x)
    session = fn.autoprof_session
    assert session.state is State.AFTER  # the synchronized calls are timed: the block next
    synced = len(syncs)
    assert _block_calls(fn, x) == 10 + 1  # the call after the block reads the clock
    assert len(syncs) == synced + 1 and session.state is State.DONE  # one sync in all
    session.flush()
    m = manifest(only_run(traces_root, "pace"))
    assert len(m["after_window_call_ms"]) == AFTER_WINDOW_CALLS
    # each iteration: the call and the caller's loop after it (sleeps overshoot, never under)
    iteration_ms = m["after_window_iter_ms"]
    assert (CALL_S + BETWEEN_S) * 1e3 <= iteration_ms < (CALL_S + BETWEEN_S) * 1e3 * 3


def test_the_block_lasts_its_time_and_no_more_than_its_calls(traces_root, monkeypatch):
    _as_if_cuda(monkeypatch, calls=2, seconds=0.05)
    fn = autoprof(name="pace_time")(_sleepy)
    x = torch.ones(2)
    for _ in range(WINDOW_CALLS + AFTER_WINDOW_CALLS):
        fn(x)
    # 50 ms of calls taking at least 6 ms with the loop: at most 9 of them, and the closing one
    assert 3 <= _block_calls(fn, x) <= 10
    monkeypatch.setattr("autoprof.record.session.after_window.PACE_S", 60.0)
    monkeypatch.setattr("autoprof.record.session.after_window.PACE_MAX_CALLS", 4)
    fn = autoprof(name="pace_most")(_sleepy)
    for _ in range(WINDOW_CALLS + AFTER_WINDOW_CALLS):
        fn(x)
    assert _block_calls(fn, x) == 4 + 1


def test_without_cuda_there_is_no_block(traces_root):
    fn = autoprof(name="no_pace")(lambda x: x + 1)
    for _ in range(WINDOW_CALLS + AFTER_WINDOW_CALLS):
        fn(1)
    assert fn.autoprof_session.state is State.DONE
    fn.autoprof_session.flush()
    assert "after_window_iter_ms" not in manifest(only_run(traces_root, "no_pace"))


def test_a_block_cut_short_sends_the_calls_without_an_iteration(traces_root, monkeypatch):
    _as_if_cuda(monkeypatch)
    fn = autoprof(name="pace_cut")(_sleepy)
    for _ in range(WINDOW_CALLS + AFTER_WINDOW_CALLS + 9):
        fn(1)
    fn.autoprof_session.flush()  # the program ends inside the block
    m = manifest(only_run(traces_root, "pace_cut"))
    assert len(m["after_window_call_ms"]) == AFTER_WINDOW_CALLS
    assert "after_window_iter_ms" not in m


def test_the_finisher_writes_the_iteration_and_reads_it_tolerantly(tmp_path):
    record = _finished(tmp_path)
    read, write = os.pipe()
    line = {"after_window_call_ms": [1.5], "after_window_iter_ms": 0.25}
    os.write(write, json.dumps(line).encode() + b"\n")
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        record_after_window(tmp_path, record, Pipe(stream), wait_s=5.0)
    after = json.loads((tmp_path / "manifest.json").read_text())
    assert after == {**record.to_dict(), **line}
    for bad in (True, "0.25", -1.0, 0, float("inf")):
        m = Manifest.from_json({"schema_version": 1, "name": "n", "after_window_iter_ms": bad},
                               "m")
        assert m.after_window_iter_ms is None, bad


def test_the_iteration_is_the_replays_untraced_step(tmp_path):
    """The reference the summary paces its replay to (metrics/replay/baseline.py)."""
    from autoprof.analysis.metrics.profiler_overhead import reference

    assert reference(Manifest(name="n", after_window_iter_ms=0.25)).after_window_us == 250.0
    assert reference(Manifest(name="n")).after_window_us is None
