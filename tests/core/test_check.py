"""autoprof.check(fn, *args, **kwargs): one full profile, right now."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from autoprof import autoprof
from tests.core.conftest import manifest, trace_files


def _path(result) -> Path:
    return Path(getattr(result, "path", result))


def test_check_calls_warmup_plus_one_schedule_and_returns_the_run(traces_root):
    calls = []

    def hotspot(x, *, scale):
        calls.append(1)
        return torch.mm(x, x) * scale

    result = autoprof.check(hotspot, torch.ones(4, 4), scale=2.0)
    assert len(calls) == 3 + 6  # default warm-up 3 + wait 1, warmup 2, active 3
    run_dir = _path(result)
    assert run_dir.parent.parent == traces_root
    m = manifest(run_dir)  # every file is written before check returns
    assert m["status"] == "complete" and m["steps_recorded"] == 3
    assert len(trace_files(run_dir)) == 1
    assert not torch.autograd._profiler_enabled()


def test_check_of_a_decorated_function_uses_its_options(traces_root):
    calls = []

    @autoprof(name="decorated", warmup=1, schedule=dict(wait=0, warmup=1, active=2, repeat=0))
    def f(x):
        calls.append(1)
        return x + 1

    result = autoprof.check(f, 1)
    assert len(calls) == 1 + 3  # repeat=0 counts as one cycle
    run_dir = _path(result)
    assert run_dir.parent.name == "decorated"
    assert manifest(run_dir)["steps_recorded"] == 2
    assert not f.autoprof_session.done and f.autoprof_session.run_dir is None  # untouched


def test_check_returns_a_loaded_run_when_the_analysis_can_load_it(traces_root):
    result = autoprof.check(lambda x: x * 2, torch.ones(2))
    from autoprof.analysis import Run

    assert isinstance(result, Run)
    assert len(result.events) > 0


def test_check_propagates_the_error_and_records_it(traces_root):
    err = RuntimeError("nope")

    def bad(x):
        raise err

    with pytest.raises(RuntimeError) as caught:
        autoprof.check(bad, 1)
    assert caught.value is err
    (run_dir,) = list((traces_root).glob("*/*"))
    m = manifest(run_dir)
    assert m["status"] == "failed" and m["error"]["phase"] == "warmup"


def test_check_with_autoprof_off_calls_fn_and_returns_no_run(monkeypatch, traces_root):
    monkeypatch.setenv("AUTOPROF", "0")
    calls = []
    assert not autoprof.check(lambda: calls.append(1))  # a falsy NoRun
    assert len(calls) == 3 + 6  # the default warm-up calls plus one default schedule
    assert not traces_root.exists()
