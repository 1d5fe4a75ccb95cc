"""When the source-lines step cannot record (its profiler does not start, its labels or hooks
fail inside the user's call, its trace cannot be written, its profiler does not stop), the
user's function still returns its own results, the measured steps are recorded as without
lines, a note says why and the run has no lines."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import autoprof
import autoprof.record.lines as lines_mod
from autoprof.analysis.metrics.lines import find_lines_files

ACTIVE = 2
SCHEDULE = {"wait": 1, "warmup": 2, "active": ACTIVE, "repeat": 1}
NET = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
X = torch.randn(4, 8)
REPLAY = torch.cuda.CUDAGraph.replay  # the lines step wraps it while it records


def step() -> float:
    with torch.no_grad():
        return float(NET(X).sum().item())


def record(out: Path, name: str) -> autoprof.Run:
    fn = autoprof.autoprof(name=name, out_dir=str(out), warmup_calls=0, schedule=SCHEDULE)(step)
    expected = step()
    assert [fn() for _ in range(1 + 2 + ACTIVE + 1)] == [expected] * (4 + ACTIVE)
    fn.autoprof_session.flush()
    (run_dir,) = sorted((out / name).iterdir())
    assert not torch.autograd._profiler_enabled()
    hooks = torch.nn.modules.module
    assert not hooks._global_forward_pre_hooks and not hooks._global_forward_hooks  # none left
    assert torch._C._len_torch_function_stack() == 0  # nor the label mode
    assert torch.cuda.CUDAGraph.replay is REPLAY  # nor the replay's label
    return autoprof.load(run_dir)


def _complete_without_lines(run: autoprof.Run) -> None:
    assert run.record is not None and run.record.status == "complete"
    assert run.record.steps_recorded == ACTIVE
    assert len(run.steps()) == ACTIVE
    assert find_lines_files(run.path) == {}
    assert not run.analysis.source_lines.available


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("no stacks here")


def test_lines_profiler_does_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(lines_mod._LineLabels, "build", staticmethod(_raise))
    with caplog.at_level(logging.INFO, logger="autoprof"):
        run = record(tmp_path, "no_start")
    assert "the source-lines step did not start" in caplog.text
    _complete_without_lines(run)


def test_trace_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(lines_mod, "lines_file",
                        lambda run_dir, worker: run_dir / "missing" / "lines.x.json.gz")
    with caplog.at_level(logging.INFO, logger="autoprof"):
        run = record(tmp_path, "no_write")
    assert "the source-lines trace was not written" in caplog.text
    _complete_without_lines(run)
    assert not list(run.path.glob(".*tmp"))  # no temporary file left behind


def test_lines_profiler_does_not_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: Callable[..., None] = lines_mod.LinesStep.__init__

    def init(self: Any, *args: Any) -> None:
        built(self, *args)
        self._prof.stop = _raise  # leaves torch's profiler on: the driver must turn it off

    monkeypatch.setattr(lines_mod.LinesStep, "__init__", init)
    _complete_without_lines(record(tmp_path, "no_stop"))


def test_labels_and_hooks_that_fail_inside_the_call(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines_mod, "is_user_file", _raise)
    monkeypatch.setattr(lines_mod.ModulePaths, "_path", _raise)
    run = record(tmp_path, "bad_labels")  # the same results, every call
    assert run.record is not None and run.record.status == "complete"
    assert len(run.steps()) == ACTIVE and find_lines_files(run.path)
