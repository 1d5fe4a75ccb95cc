"""One torch profiler at a time: recursion, nesting, regions, the user's own profiler, threads."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch

from autoprof import autoprof
from autoprof.record.warn import AutoprofWarning
from tests.core.conftest import event_names, manifest, only_run, run_dirs, trace_files

TINY = dict(wait=0, warmup=1, active=1)


def test_recursion_only_adds_labels(traces_root):
    @autoprof(name="fact", warmup=0, schedule=TINY)
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    assert [fact(5), fact(4), fact(3)] == [120, 24, 6]
    fact.autoprof_session.flush()
    run = only_run(traces_root, "fact")
    m = manifest(run)
    assert m["status"] == "complete" and m["steps_recorded"] == 1
    names = event_names(trace_files(run)[0])
    assert names.count("fact") == 4  # the recorded call fact(4) and its 3 recursive calls
    assert sum(n.startswith("ProfilerStep#") for n in names) == 1


def test_recursion_in_every_active_step_of_a_longer_run(traces_root):
    """Steps after the first go through Session's fast path; recursion there still labels."""
    @autoprof(name="fib", warmup=0, schedule=dict(wait=1, warmup=1, active=4))
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert [fib(4) for _ in range(8)] == [3] * 8
    run = only_run(traces_root, "fib")
    fib.autoprof_session.flush()
    m = manifest(run)
    assert m["status"] == "complete" and m["steps_recorded"] == 4
    names = event_names(trace_files(run)[0])
    assert names.count("fib") == 4 * 9  # fib(4) makes 9 calls, in each of 4 recorded steps
    assert sum(n.startswith("ProfilerStep#") for n in names) == 4


def test_nested_session_only_labels_and_retires(traces_root):
    @autoprof(name="inner", warmup=1, schedule=TINY)
    def inner(x):
        return torch.relu(x)

    @autoprof(name="outer", warmup=1, schedule=TINY)
    def outer(x):
        return inner(x) + 1

    x = torch.ones(3)
    for _ in range(5):
        assert torch.equal(outer(x), x + 1)
    outer.autoprof_session.flush()
    assert inner.autoprof_session.done  # covered by outer's trace, no run of its own
    assert run_dirs(traces_root, "inner") == []
    names = event_names(trace_files(only_run(traces_root, "outer"))[0])
    assert "outer" in names and "inner" in names


def test_regions_inside_a_decorated_step_label_it(traces_root):
    @autoprof(name="train_step", warmup=1, schedule=TINY)
    def train_step(x):
        with autoprof.region("forward"):
            y = x * 2
        with autoprof.region("backward"):
            z = y.sum()
        return z

    for i in range(4):
        assert train_step(torch.full((2,), float(i))).item() == 4 * i
    train_step.autoprof_session.flush()
    names = event_names(trace_files(only_run(traces_root, "train_step"))[0])
    assert {"train_step", "forward", "backward"} <= set(names)
    assert run_dirs(traces_root, "forward") == [] and run_dirs(traces_root, "backward") == []


def test_region_alone_is_a_session(traces_root):
    for i in range(1 + 2):  # one untraced entry, then profiler warm-up and one active step
        with autoprof.region("solo", warmup=1, schedule=TINY):
            torch.ones(2) * i
    run = only_run(traces_root, "solo")
    m = manifest(run)  # the session finished on the last exit
    assert m["name"] == "solo" and len(m["warmup_call_ms"]) == 1
    autoprof.flush()
    m = manifest(run)
    assert m["status"] == "complete" and m["steps_recorded"] == 1
    assert "solo" in event_names(trace_files(run)[0])
    with autoprof.region("solo"):  # done: a no-op
        pass
    assert not torch.autograd._profiler_enabled()


@pytest.mark.slow
def test_region_exception_propagates_and_fails_the_run(traces_root):
    err = ValueError("bad batch")
    try:
        with autoprof.region("oops", warmup=0, schedule=TINY, source_lines=False):
            raise err
    except ValueError as exc:
        assert exc is err
    else:
        raise AssertionError("the region swallowed the exception")
    autoprof.flush()
    m = manifest(only_run(traces_root, "oops"))
    assert m["status"] == "failed" and m["error"]["phase"] == "profiler_warmup"
    try:  # with source lines on, the first profiler warm-up step records them ("lines")
        with autoprof.region("oops_lines", warmup=0, schedule={**TINY, "warmup": 2}):
            raise err
    except ValueError:
        pass
    autoprof.flush()
    m = manifest(only_run(traces_root, "oops_lines"))
    assert m["status"] == "failed" and m["error"]["phase"] == "lines"


def test_user_profiler_active_only_labels_and_warns_once(traces_root, monkeypatch):
    import autoprof.record.warn as warn_mod

    monkeypatch.setattr(warn_mod, "_seen", set())

    @autoprof(name="under_user", warmup=0, schedule=TINY)
    def f(x):
        return x + 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for i in range(3):
                assert f(i) == i + 1
    mine = [w for w in caught if issubclass(w.category, AutoprofWarning)]
    assert len(mine) == 1 and "already running" in str(mine[0].message)
    assert run_dirs(traces_root, "under_user") == []
    assert [e.key for e in prof.events()].count("under_user") == 3


def test_four_threads_one_coherent_run(traces_root):
    @autoprof(name="shared", warmup=2, schedule=dict(wait=0, warmup=1, active=2))
    def work(a, b):
        return torch.mm(a, b).sum().item()

    a = torch.ones(8, 8)
    results: dict[int, list[float]] = {}
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            results[k] = [work(a * k, a) for _ in range(10)]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k in range(1, 5):
        assert results[k] == [64.0 * k * 8] * 10
    work.autoprof_session.flush()
    run = only_run(traces_root, "shared")
    m = manifest(run)
    assert m["status"] == "complete"
    assert m["steps_recorded"] == 2
    assert len(m["warmup_call_ms"]) == 2
    traces = trace_files(run)
    assert len(traces) == 1
    names = event_names(traces[0])
    assert sum(n.startswith("ProfilerStep#") for n in names) == 2
    assert not torch.autograd._profiler_enabled()
