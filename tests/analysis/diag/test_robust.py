"""Every analysis on an empty run, a one-step run, a CPU-only run and a GPU run without steps:
no crash, JSON-able output, and nothing claimed that the data cannot support."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from support.diagbuild import FakeRun, Trace, matmul_like

from autoprof.analysis import verdict
from autoprof.analysis.metrics.ranks import rank_table, straggler_rank
from autoprof.analysis.metrics.steps import per_step
from autoprof.analysis.report.side_by_side import compare
from autoprof.analysis.report.summary import summarize


def _empty() -> pd.DataFrame:
    return matmul_like(steps=1).frame().iloc[0:0]


def _one_step() -> pd.DataFrame:
    return matmul_like(steps=1).frame()


def _cpu_only() -> pd.DataFrame:
    t = Trace()
    for i in range(3):
        t.step(i, i * 100.0, 90.0).cpu("aten::add", i * 100.0 + 5, 50.0)
    return t.frame()


def _gpu_no_steps() -> pd.DataFrame:
    t = Trace().cpu("aten::mm", 0.0, 30.0)
    t.launch(5.0, 8.0, 20.0, 100.0)
    return t.frame()


CASES = {"empty": _empty, "one-step": _one_step, "cpu-only": _cpu_only,
         "gpu-no-steps": _gpu_no_steps}


@pytest.mark.parametrize("case", list(CASES))
def test_every_analysis_survives(case):
    events = CASES[case]()
    run = FakeRun(events, manifest={"warmup_call_ms": []} if case == "one-step" else None)
    s = summarize(run).to_dict()
    json.dumps(s, allow_nan=False)
    assert s["straggler_rank"] is None
    assert straggler_rank(events) is None
    assert len(rank_table(events)) == (0 if case == "empty" else 1)
    compare([run])
    per_step(events)
    ids = {d["id"] for d in s["diagnostics"]}
    assert "cold-start" not in ids  # needs two steps
    expected = {"empty": "cpu-only", "one-step": "overhead-bound", "cpu-only": "cpu-only",
                "gpu-no-steps": "compute-bound"}[case]
    assert verdict(events).kind == expected


def test_gpu_without_steps_uses_first_cpu_event_as_window_start():
    s = summarize(FakeRun(_gpu_no_steps())).to_dict()
    assert s["overhead"]["window_us"] == pytest.approx(120.0)  # 0 .. kernel end 120
    assert s["gpu_busy_pct"] == pytest.approx(100 * 100.0 / 120.0)
    assert s["steps"] == []
