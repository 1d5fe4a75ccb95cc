"""What a new user meets first: short programs say what they recorded and what the schedule
needed, the end-of-run line counts recorded steps, runs are named as the user wrote the
callable, ``check`` with autoprof off says so, and a check blocked by another run warns."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import warnings

import pytest
import torch

from autoprof import autoprof
from autoprof.record import check as check_mod
from autoprof.record import export
from tests.core.conftest import only_run, run_dirs

NEED = ("the schedule needs 3 warm-up calls + wait 1 + warmup 2 + active 3 = 9 calls: pass "
        "warmup_calls=0, schedule=dict(wait=0, ")


def _notes(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if f"'{name}'" in r.getMessage()]


def test_a_function_called_fewer_times_than_its_warmup_says_so_at_flush(caplog, traces_root):
    caplog.set_level(logging.INFO, logger="autoprof")

    @autoprof(name="main_twice")
    def main_twice(x):
        return x + 1

    for _ in range(2):
        main_twice(torch.ones(1))
    autoprof.flush()
    autoprof.flush()  # said once
    assert _notes(caplog, "main_twice") == [
        "autoprof: 'main_twice' recorded no step and wrote no run folder: called 2 times; "
        + NEED + "warmup=1, active=1) or call it more"]
    assert run_dirs(traces_root, "main_twice") == []


def test_a_run_with_no_recorded_step_says_so_and_what_it_needed(caplog, traces_root):
    caplog.set_level(logging.INFO, logger="autoprof")

    @autoprof(name="five")
    def five(x):
        return x + 1

    for _ in range(6):  # 3 warm-up calls, the wait step, the lines and profiler warm-up steps
        five(torch.ones(1))
    autoprof.flush()
    run = only_run(traces_root, "five")
    (line,) = [m for m in _notes(caplog, "five") if "run of" in m]
    assert line == ("autoprof: run of 'five' recorded no step (called 6 times; " + NEED
                    + "warmup=1, active=5) or call it more); the folder holds no trace; "
                    f"finishing in the background: {run}")


def test_the_end_of_run_line_counts_recorded_steps_not_wait_or_warmup_calls(caplog):
    caplog.set_level(logging.INFO, logger="autoprof")

    @autoprof(name="seven")
    def seven(x):
        return x + 1

    for _ in range(8):
        seven(torch.ones(1))
    autoprof.flush()
    (line,) = [m for m in _notes(caplog, "seven") if "run of" in m]
    assert line.startswith("autoprof: run of 'seven' recorded partially (2 of 3 steps: "
                           "called 8 times; " + NEED + "warmup=1, active=7) or call it more)")


class TinyNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def test_check_names_a_module_by_its_class_and_a_torch_builtin_as_written(traces_root):
    fast = dict(warmup_calls=0, schedule=dict(wait=0, warmup=1, active=1))
    net = autoprof.check(autoprof(**fast)(TinyNet()), torch.ones(1, 2))
    assert net.manifest["name"] == "TinyNet"
    assert net.manifest["qualname"] == f"{__name__}.TinyNet"
    mm = autoprof.check(autoprof(**fast)(torch.matmul), torch.ones(2, 2), torch.ones(2, 2))
    assert mm.manifest["name"] == "torch.matmul"
    assert only_run(traces_root, "TinyNet").parent.name == "TinyNet"


def test_check_with_autoprof_off_returns_a_falsy_no_run_whose_methods_say_why(monkeypatch):
    monkeypatch.setenv("AUTOPROF", "0")
    run = autoprof.check(lambda: None)
    assert not run and "AUTOPROF=0" in repr(run)
    with pytest.raises(check_mod.NoRunError, match="autoprof is off: AUTOPROF=0"):
        run.verdict()
    assert not hasattr(run, "_repr_html_")  # notebooks and copy probe dunders quietly


def test_the_finisher_starts_at_the_lowest_nice_and_works_at_idle_priority(tmp_path):
    finisher = export.Finisher.start(tmp_path, None)
    try:
        assert os.getpriority(os.PRIO_PROCESS, finisher.proc.pid) == export.IDLE_NICE
    finally:
        finisher.proc.kill()
        finisher.proc.wait()
    code = ("import os; from autoprof.record.finisher.cpu_gate import work_at_idle_priority as w; "
            "print(w(), os.sched_getscheduler(0) == getattr(os, 'SCHED_IDLE', None))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    if hasattr(os, "SCHED_IDLE"):
        assert done.stdout.split() == ["SCHED_IDLE", "True"]


def test_check_blocked_by_a_run_owned_by_a_pool_thread_warns_and_says_so(traces_root):
    @autoprof(name="in_pool", warmup_calls=0, schedule=dict(wait=0, warmup=1, active=3))
    def in_pool(x):
        return x + 1

    async def program() -> object:
        await asyncio.to_thread(in_pool, torch.ones(1))  # a pool thread owns the profiler
        with warnings.catch_warnings(record=True) as said:  # the pool thread lives, idle
            warnings.simplefilter("always")
            run = autoprof.check(lambda x: x * 2, torch.ones(1))
        caught.extend(said)
        return run

    caught: list[warnings.WarningMessage] = []
    run = asyncio.run(program())
    said = caught
    assert not run
    (warning,) = [str(w.message) for w in said if "recorded no run" in str(w.message)]
    assert "'in_pool', whose profiler runs on thread 'asyncio_0'" in warning
    with pytest.raises(check_mod.NoRunError, match="see the warning above"):
        run.summary()


PROGRAM = """
import json, sys, torch
from autoprof import autoprof
lazy = torch.__dict__["__getattr__"]

@autoprof(name="stall", warmup_calls=1, schedule=dict(wait=1, warmup=1, active=1))
def f(x):
    return x @ x

for _ in range(4):
    f(torch.ones(4, 4))
autoprof.flush()
manifest = json.loads((f.autoprof_session.run_dir / "manifest.json").read_text())
print(json.dumps({"inductor": "torch._inductor" in sys.modules,
                  "restored": torch.__dict__["__getattr__"] is lazy,
                  "start_ms": manifest.get("profiler_start_ms")}))
"""


def test_the_profiler_start_skips_torchs_inductor_import_and_is_measured(tmp_path):
    """torch's prepare_trace asks hasattr(torch, "_inductor"), which imported ~800 modules
    inside the user's call (0.9-6 s); the stall left is kept as profiler_start_ms."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "AUTOPROF_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["inductor"] is False and result["restored"] is True
    assert isinstance(result["start_ms"], float) and result["start_ms"] > 0


def test_a_partial_run_summarises_only_its_recorded_steps(traces_root):
    """Eight calls of the default schedule record 2 steps; torch opens a third span at the
    last step() and the stop closes it empty: it is not a step of the run."""
    from autoprof.analysis.analysis import Analysis

    @autoprof(name="seven_steps")
    def f(x):
        return x @ x

    for _ in range(8):
        f(torch.ones(8, 8))
    autoprof.flush()
    run = autoprof.load(only_run(traces_root, "seven_steps"))
    analysis = Analysis.of(run)
    assert run.manifest["steps_recorded"] == 2
    assert len(analysis.steps) == 2 and len(analysis.breakdown.steps) == 2


def test_ctrl_c_while_torch_stops_the_last_cycle_fails_the_run(monkeypatch, traces_root):
    """A Ctrl+C that lands in torch's step() after its stop, before the export (the long C++
    part), left 'partial' with steps_recorded 3, no trace and no error."""
    from autoprof.record.session import driver

    real_step = driver.Driver.step

    def interrupted_at_the_end(self):
        if self._steps_taken + 1 >= self.total_steps:
            raise KeyboardInterrupt
        real_step(self)

    monkeypatch.setattr(driver.Driver, "step", interrupted_at_the_end)
    fn = autoprof(name="ctrl_c_end", warmup=0, schedule=dict(wait=0, warmup=1, active=2))(
        lambda x: x + 1)
    fn(torch.ones(1))
    fn(torch.ones(1))
    with warnings.catch_warnings(record=True), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("always")
        fn(torch.ones(1))  # the user's Ctrl+C still reaches the user
    autoprof.flush()
    from tests.core.conftest import manifest

    m = manifest(only_run(traces_root, "ctrl_c_end"))
    assert m["status"] == "failed" and m["error"]["type"] == "KeyboardInterrupt"
