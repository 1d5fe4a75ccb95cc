"""The thread model: torch's profiler is started, stepped and stopped only on the live thread
that started it (the owner); other threads' calls, and calls after the owner ended, are
pass-throughs. Programs that would crash torch run in a child process here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
import torch

from autoprof import autoprof
from autoprof.record.warn import AutoprofWarning
from tests.core.conftest import manifest, only_run, trace_files

REPO = Path(__file__).resolve().parents[2]


def run_program(source: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True, text=True, timeout=timeout_s, env=env,
    )


# The owner thread ends in the middle of the schedule, in its recording phase: torch's
# profiler left enabled by a dead thread, or stopped from another one, crashed the process
# at exit (SIGSEGV).
OWNER_ENDS_EARLY = """
    import threading, torch
    from autoprof import autoprof

    @autoprof(name="worker", warmup=0, schedule=dict(wait=1, warmup=1, active=3))
    def f(x):
        return x @ x

    def worker(n):
        for _ in range(n):
            f(torch.ones(8, 8))

    t = threading.Thread(target=worker, args=(3,)); t.start(); t.join()
    t = threading.Thread(target=worker, args=(4,)); t.start(); t.join()  # may reuse the ident
    print("RESULT", f(torch.ones(2, 2)).sum().item(), flush=True)
"""


@pytest.mark.slow
def test_owner_thread_ending_early_stops_its_run_on_that_thread(traces_root):
    done = run_program(OWNER_ENDS_EARLY)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT 8.0" in done.stdout
    assert "ended before its schedule did" in done.stderr
    m = manifest(only_run(traces_root, "worker"))
    assert m["status"] == "partial" and m["error"] is None
    assert m["steps_recorded"] == 1  # step 2 of wait=1 warmup=1 active=3: one recorded step
    assert len(trace_files(only_run(traces_root, "worker"))) == 1


# A daemon thread owns the profiler and is still running when the interpreter exits: the
# exit-time flush on the main thread must not stop it (torch crashes), only abandon it.
DAEMON_OWNER_AT_EXIT = """
    import threading, time, torch
    from autoprof import autoprof

    @autoprof(name="daemon", warmup=0, schedule=dict(wait=0, warmup=1, active=3))
    def f(x):
        return x @ x

    ready = threading.Event()
    def worker():
        for _ in range(2):
            f(torch.ones(8, 8))
        ready.set()
        time.sleep(600)

    threading.Thread(target=worker, daemon=True).start()
    ready.wait()
    print("MAIN ENDS", flush=True)
"""


def test_exit_never_stops_a_profiler_of_a_thread_still_running(traces_root):
    done = run_program(DAEMON_OWNER_AT_EXIT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MAIN ENDS" in done.stdout
    assert "cannot stop it now" in done.stderr
    m = manifest(only_run(traces_root, "daemon"))
    assert m["status"] in ("partial", "failed") and m["status"] != "recording"


def test_calls_from_another_thread_are_not_steps_and_warn_once(traces_root):
    @autoprof(name="main_owned", warmup=0, schedule=dict(wait=0, warmup=1, active=2))
    def f(x):
        return x + 1

    assert f(torch.zeros(1)).item() == 1  # starts the profiler on this thread: step 0
    session = f.autoprof_session  # type: ignore[attr-defined]
    results: list[float] = []

    def other() -> None:
        results.append(f(torch.zeros(1)).item())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            t = threading.Thread(target=other)
            t.start()
            t.join()
    assert results == [1.0, 1.0, 1.0]
    assert session._run.steps_done == 1  # the other threads' calls were not steps
    mine = [w for w in caught if issubclass(w.category, AutoprofWarning)]
    assert len(mine) == 1 and "called from thread" in str(mine[0].message)
    for _ in range(2):
        f(torch.zeros(1))
    session.flush()
    m = manifest(only_run(traces_root, "main_owned"))
    assert m["status"] == "complete" and m["steps_recorded"] == 2


def test_flush_from_another_thread_asks_the_owner_to_stop(traces_root):
    @autoprof(name="asked", warmup=0, schedule=dict(wait=0, warmup=1, active=5))
    def f(x):
        return x * 3

    for _ in range(3):
        f(torch.ones(1))
    session = f.autoprof_session  # type: ignore[attr-defined]
    flusher = threading.Thread(target=autoprof.flush)  # waits for nothing it cannot finish
    started = time.monotonic()
    flusher.start()
    flusher.join()
    assert time.monotonic() - started < 5
    assert torch.autograd._profiler_enabled()  # not stopped from the other thread
    assert f(torch.ones(1)).item() == 3  # the owner's next call stops it, here
    assert not torch.autograd._profiler_enabled() and session.done
    session.flush()
    m = manifest(only_run(traces_root, "asked"))
    assert m["status"] == "partial" and m["steps_recorded"] == 2


def test_a_thread_reusing_the_owners_ident_is_not_the_owner():
    @autoprof(name="reuse", warmup=0, schedule=dict(wait=0, warmup=1, active=2))
    def f(x):
        return x

    session = f.autoprof_session  # type: ignore[attr-defined]
    idents: list[int] = []

    def call() -> None:
        idents.append(threading.get_ident())
        f(torch.ones(1))

    t = threading.Thread(target=call)
    with pytest.warns(AutoprofWarning, match="ended before its schedule did"):
        t.start()
        t.join()  # the owner ended: its run ended with it, on that thread
    assert session.done and not torch.autograd._profiler_enabled()
    t = threading.Thread(target=call)
    t.start()
    t.join()
    assert session._run.steps_done == 1  # the second thread did not step a dead run
    assert len(idents) == 2


def test_state_changes_only_along_the_transition_table():
    from autoprof.record.session.table import TRANSITIONS, State

    @autoprof(name="table", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f(x):
        return x

    session = f.autoprof_session  # type: ignore[attr-defined]
    seen = [session.state]
    for _ in range(2):
        f(torch.ones(1))
        seen.append(session.state)
    assert seen == [State.WARMUP_CALLS, State.PROFILING, State.AFTER]  # the next calls are timed
    assert all(pair in TRANSITIONS for pair in zip(seen, seen[1:], strict=False))
    with pytest.raises(RuntimeError, match="no transition after_window -> profiling"):
        session._enter(State.PROFILING)  # a finished session never records again


def test_the_profiler_waits_for_a_warm_up_call_still_running_on_another_thread(traces_root):
    """Warm-up call 1 blocks on a worker thread while the main thread makes call 2 and goes on:
    the profiler must not start (and the schedule must not run out) before call 1 has ended,
    or the run misses its time and records the worker's call inside a step."""
    from tests.core.conftest import manifest, only_run

    entered, release = threading.Event(), threading.Event()

    @autoprof(name="slow_warmup", warmup=2, schedule=dict(wait=0, warmup=0, active=2))
    def work(block: bool) -> int:
        if block:
            entered.set()
            release.wait(timeout=30)
        return 1

    worker = threading.Thread(target=work, args=(True,))
    worker.start()
    assert entered.wait(timeout=30)
    for _ in range(5):  # warm-up 2, then calls while warm-up 1 is still running
        work(False)
    release.set()
    worker.join()
    for _ in range(3):
        work(False)
    work.autoprof_session.flush()
    m = manifest(only_run(traces_root, "slow_warmup"))
    assert len(m["warmup_call_ms"]) == 2
    assert m["status"] == "complete"
