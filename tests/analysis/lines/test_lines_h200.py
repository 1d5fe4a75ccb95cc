"""Source lines on the H200: the run folders `benchmarks/lines/gpu_lines.py` recorded there
(`tests/data/gpu_h200_lines/`, torch 2.11.0+cu130, the default schedule with its lines step)
are checked again here, on the CPU, by the same checks (tests/support/lines_checks.py;
docs/gpu-validation.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import lines_checks

import autoprof

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "gpu_h200_lines"

CASES = ("sync", "loader", "slow_op", "cuda_graph", "backward", "reduce_overhead", "compiled")


def _run(lines: str, case: str) -> Any:
    (path,) = (DATA / "runs" / lines / case).iterdir()
    return autoprof.load(path)


@pytest.mark.parametrize("case", CASES)
def test_every_program_names_its_line_on_the_h200(case):
    run = _run("on", case)
    assert run.is_cuda
    check = lines_checks.CHECKS[case](run, lines_checks.rows_with_lines(run))
    assert check["ok"], check
    assert lines_checks.count_check(run, _run("off", case))["ok"]
    match = run.analysis.source_lines.attribution.match_pct
    assert match >= (96.0 if case == "backward" else 99.99)  # backward: 96.03%


def test_a_reduce_overhead_replay_splits_between_its_call_and_its_forward():
    """The replayed graph's extern matmuls take the calling line; its two triton kernels, named
    by inductor's provenance, the compiled forward's lines."""
    run = _run("on", "reduce_overhead")
    check = lines_checks.check_reduce_overhead(run, lines_checks.rows_with_lines(run))
    assert check["call_line_pct"] == pytest.approx(92.66, abs=0.01)
    assert check["forward_lines_pct"] == pytest.approx(7.34, abs=0.01)


def test_the_recorded_results_hold_what_the_runs_show():
    results = json.loads((DATA / "results.json").read_text())
    assert results["torch"].startswith("2.11") and results["cuda"] is True
    steps = {case: (c["step_us_on"], c["step_us_off"]) for case, c in results["cases"].items()}
    assert steps["sync"] == ([486.1, 429.4, 416.7], [483.0, 422.2, 418.5])
    first_on_over_off = [on[0] / off[0] for on, off in steps.values()]
    assert max(first_on_over_off) < 1.25  # slow op: 553.4 against 450.0 us
