"""Analyses computed aside in a forked child (autoprof/analysis/report/aside.py): the same answer
as computing them here, and every way the child can fail leaves the parent to compute them."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from support.synthetic import write_synthetic_trace

from autoprof.analysis.report import aside
from autoprof.analysis.report.aside import Aside, computed_aside, fork_pays

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork: Linux only")


_FORKED: list[int] = []


@pytest.fixture
def small_runs_pay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any run forks here, whatever its size and this machine's cores; the children's pids
    are kept in ``_FORKED``."""
    monkeypatch.setattr(aside, "MIN_ROWS", 0)
    monkeypatch.setattr(aside, "cores", lambda: 2)
    real_fork = os.fork
    _FORKED.clear()

    def fork() -> int:
        pid = real_fork()
        if pid:
            _FORKED.append(pid)
        return pid

    monkeypatch.setattr(aside.os, "fork", fork)


class Fake:
    """Cached properties that say which process computed them."""

    def __init__(self, rows: int = 10) -> None:
        self.events = range(rows)
        self.computed_here: list[str] = []

    @cached_property
    def pid(self) -> int:
        self.computed_here.append("pid")
        return os.getpid()

    @cached_property
    def table(self) -> dict[str, Any]:
        self.computed_here.append("table")
        return {"rows": list(range(5)), "pid": os.getpid()}

    @cached_property
    def broken(self) -> int:
        self.computed_here.append("broken")
        raise ValueError("the analysis itself fails")

    @cached_property
    def slow(self) -> int:
        self.computed_here.append("slow")
        time.sleep(30)
        return 1

    @cached_property
    def warns(self) -> int:
        self.computed_here.append("warns")
        warnings.warn("something odd in this run", UserWarning, stacklevel=1)
        return 7

    @cached_property
    def unpicklable(self) -> Any:
        self.computed_here.append("unpicklable")
        return lambda: None


def _no_children_left() -> bool:
    """Every child forked here has been reaped (none left running or as a zombie)."""
    assert _FORKED
    for pid in _FORKED:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return True


def test_values_computed_in_the_child_become_the_analysis_own(small_runs_pay: None) -> None:
    fake = Fake()
    side = Aside.start(fake, ["pid", "table"])
    assert side is not None
    assert side.collect()
    assert fake.pid != os.getpid()  # computed by the child
    assert fake.table["rows"] == [0, 1, 2, 3, 4] and fake.table["pid"] == fake.pid
    assert fake.computed_here == []  # never computed here
    assert _no_children_left()


def test_a_value_already_computed_is_not_computed_again(small_runs_pay: None) -> None:
    fake = Fake()
    here = fake.pid
    assert Aside.start(fake, ["pid"]) is None
    assert fake.pid == here


def test_a_failing_analysis_is_computed_here_and_raises_here(small_runs_pay: None) -> None:
    fake = Fake()
    side = Aside.start(fake, ["pid", "broken"])
    assert side is not None
    assert not side.collect()  # nothing kept, not even the value that worked
    assert "pid" not in vars(fake)
    with pytest.raises(ValueError, match="the analysis itself fails"):
        _ = fake.broken
    assert fake.computed_here == ["broken"]
    assert _no_children_left()


def test_a_value_that_cannot_be_sent_is_computed_here(small_runs_pay: None) -> None:
    fake = Fake()
    side = Aside.start(fake, ["unpicklable"])
    assert side is not None and not side.collect()
    assert callable(fake.unpicklable) and fake.computed_here == ["unpicklable"]


def test_a_child_past_its_deadline_is_killed_and_reaped(small_runs_pay: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aside, "GRACE_S", 0.3)
    monkeypatch.setattr(aside, "FACTOR", 0.0)
    fake = Fake()
    side = Aside.start(fake, ["slow"])
    assert side is not None
    t0 = time.monotonic()
    assert not side.collect()
    assert time.monotonic() - t0 < 5
    assert "slow" not in vars(fake)
    assert _no_children_left()


def test_the_child_warnings_are_given_again_here(small_runs_pay: None) -> None:
    fake = Fake()
    side = Aside.start(fake, ["warns"])
    assert side is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert side.collect()
    assert [str(w.message) for w in caught] == ["something odd in this run"]
    assert caught[0].category is UserWarning and fake.warns == 7
    assert fake.computed_here == []


def test_leaving_the_block_without_collecting_stops_the_child(small_runs_pay: None) -> None:
    fake = Fake()
    with pytest.raises(KeyboardInterrupt):
        with computed_aside(fake, ["slow"]) as side:
            assert side is not None
            raise KeyboardInterrupt
    assert _no_children_left()
    assert "slow" not in vars(fake)


def test_where_it_does_not_fork(small_runs_pay: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert fork_pays(10)
    monkeypatch.setenv("AUTOPROF_SUMMARY_FORK", "0")
    assert not fork_pays(10)
    monkeypatch.delenv("AUTOPROF_SUMMARY_FORK")
    monkeypatch.setattr(aside, "cores", lambda: 1)
    assert not fork_pays(10)
    monkeypatch.setattr(aside, "cores", lambda: 2)
    monkeypatch.setattr(aside, "MIN_ROWS", 100)
    assert not fork_pays(99) and fork_pays(100)
    found: list[bool] = []  # a server's worker thread: never
    worker = threading.Thread(target=lambda: found.append(fork_pays(100)))
    worker.start()
    worker.join()
    assert found == [False]


def test_a_failed_fork_leaves_everything_to_this_process(small_runs_pay: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(aside.os, "fork", no_fork)
    fake = Fake()
    assert Aside.start(fake, ["pid"]) is None
    assert fake.pid == os.getpid()


def test_the_summary_is_the_same_with_and_without_the_child(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_runs_pay: None) -> None:
    from autoprof.analysis.analysis import Analysis
    from autoprof.analysis.report import summary as summary_module
    from autoprof.analysis.run import load

    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    trace = write_synthetic_trace(tmp_path / "trace.json", 20_000)
    started: list[int] = []
    real_start = Aside.start

    def counting_start(analysis: Any, names: Any) -> Aside | None:
        side = real_start(analysis, names)
        started.append(side is not None)
        return side

    monkeypatch.setattr(Aside, "start", staticmethod(counting_start))
    forked_run = load(trace)
    forked = summary_module.summarize(forked_run)
    assert started == [True]
    ctx = Analysis.of(forked_run)
    assert {"ops", "efficiency"} <= set(vars(ctx))

    monkeypatch.setenv("AUTOPROF_SUMMARY_FORK", "0")
    alone = summary_module.summarize(load(trace))
    assert started == [True, False]
    assert json.dumps(forked, sort_keys=True) == json.dumps(alone, sort_keys=True)
