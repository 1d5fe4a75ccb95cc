"""The source-lines step never shows in the measured steps: a function profiled for N active
steps has exactly N times its per-step calls of every op in the ops table, its N steps in
the steps table and no event before the first active step, with ``source_lines`` on (the
default) and off. The lines trace sits in the run folder (and in the manifest's files)
beside the main trace, but the loader never reads it as a cycle."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

import autoprof
from autoprof.analysis.metrics.lines import find_lines_files

ACTIVE = 4
SCHEDULE = {"wait": 1, "warmup": 2, "active": ACTIVE, "repeat": 1}
# torch numbers the steps from 0: wait, the lines step, torch's own warm-up, active
FIRST_ACTIVE_STEP = 3
A = torch.randn(48, 48)


def step() -> float:
    x = A
    for _ in range(3):
        x = torch.mm(x, A)  # 3 aten::mm per step
    y = torch.add(x, 1.0)
    y = torch.add(y, 2.0)  # 2 aten::add per step
    return float(y.sum().item())  # 1 aten::item, 1 aten::sum per step


PER_STEP = {"aten::mm": 3, "aten::add": 2, "aten::item": 1, "aten::sum": 1}


def record(out: Path, source_lines: bool) -> autoprof.Run:
    fn = autoprof.autoprof(name=f"counts_{int(source_lines)}", out_dir=str(out), warmup_calls=1,
                           schedule=SCHEDULE, source_lines=source_lines)(step)
    results = [fn() for _ in range(1 + 3 + ACTIVE + 2)]  # warm-up, wait + 2 warm, active, after
    assert results == [step()] * len(results)  # the user's result, every call
    fn.autoprof_session.flush()
    (run_dir,) = sorted(p for p in (out / f"counts_{int(source_lines)}").iterdir())
    return autoprof.load(run_dir)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, autoprof.Run]:
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("counts")
    return {on: record(out, on) for on in (True, False)}


def test_source_lines_is_the_default() -> None:
    from autoprof.record.options import Options

    assert Options().source_lines is True


@pytest.mark.parametrize("on", [True, False])
def test_each_op_counts_the_active_steps_only(runs: dict[bool, autoprof.Run], on: bool) -> None:
    run = runs[on]
    assert bool(find_lines_files(run.path)) is on
    assert [p.name for p in run.trace_paths] == [p.name for p in run.path.glob("*.pt.trace*")]
    ops = run.ops().set_index("name")["calls"]
    for name, per_step in PER_STEP.items():
        assert ops[name] == ACTIVE * per_step, (name, ops[name])
    assert ops["ProfilerStep*"] == ACTIVE and ops[f"counts_{int(on)}"] == ACTIVE
    assert (ops % ACTIVE == 0).all(), ops[ops % ACTIVE != 0]
    events = run.events
    user = events[events["cat"] == "cpu_op"]
    per_step = user.groupby("step")["name"].value_counts().unstack(fill_value=0)
    assert list(per_step.index) == list(range(FIRST_ACTIVE_STEP, FIRST_ACTIVE_STEP + ACTIVE))
    assert (per_step.nunique() == 1).all()  # every step has the same calls of every op


@pytest.mark.parametrize("on", [True, False])
def test_step_times_are_the_active_steps(runs: dict[bool, autoprof.Run], on: bool) -> None:
    run = runs[on]
    steps = run.steps()
    assert list(steps["step"]) == list(range(FIRST_ACTIVE_STEP, FIRST_ACTIVE_STEP + ACTIVE))
    assert ((steps["end_us"] - steps["start_us"]) > 0).all()
    assert run.record is not None and run.record.steps_recorded == ACTIVE
    first_us = float(steps["start_us"].min())
    events = run.events
    assert float(events.loc[events["cat"] == "cpu_op", "ts_us"].min()) >= first_us
    assert not (events["cat"] == "python_function").any()  # the lines step's stacks: absent


def test_the_same_ops_table_with_and_without_lines(runs: dict[bool, autoprof.Run]) -> None:
    def calls(run: autoprof.Run) -> pd.Series:
        ops = run.ops()
        ops = ops[~ops["name"].astype(str).str.startswith("counts_")]
        return ops.set_index("name")["calls"].sort_index()

    pd.testing.assert_series_equal(calls(runs[True]), calls(runs[False]))
