"""The held-out programs run: every GPU program and fix, and every CPU one (the three CPU sets),
on the CPU at tiny sizes (the dry run's code, executed here in one process instead of one
process each)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCH / "gpu"))
sys.path.insert(0, str(BENCH))

from cpu_catalogue_heldout import CASES as CATALOGUE_CASES  # noqa: E402
from cpu_heldout import CASES as CPU_HELDOUT  # noqa: E402
from cpu_loader_heldout import CASES as LOADER_CASES  # noqa: E402
from heldout_cases import CASES as GPU_CASES  # noqa: E402
from heldout_compare import judge_fix  # noqa: E402
from heldout_driver import fix_truth, timer_code  # noqa: E402

CPU_CASES = {**CPU_HELDOUT, **CATALOGUE_CASES, **LOADER_CASES}

SIDES = [(name, fix) for cases in (GPU_CASES, CPU_CASES) for name in cases
         for fix in (None, *cases[name]["fixes"])]


def _run(code: str) -> dict[str, Any]:
    threads = torch.get_num_threads()
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "<heldout>", "exec"), {"__name__": "heldout"})
    finally:
        torch.set_num_threads(threads)
    result: dict[str, Any] = json.loads(printed.getvalue().strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(("name", "fix"), SIDES, ids=[f"{n}-{f}" for n, f in SIDES])
def test_each_program_and_fix_runs_on_cpu_at_tiny_sizes(name: str, fix: str | None) -> None:
    cases = GPU_CASES if name in GPU_CASES else CPU_CASES
    got = _run(timer_code(cases[name], fix, "cpu", dry=True))
    assert got["ms_per_iter"] > 0
    assert len(got["blocks_ms"]) == 1


def test_a_fix_differs_from_the_program_in_its_code_or_its_setup() -> None:
    for cases in (GPU_CASES, CPU_CASES):
        for case in cases.values():
            for label, fix in case["fixes"].items():
                assert fix.get("code") or f"'{label}'" in case["setup"], label


def test_the_truth_is_the_median_of_paired_ratios_with_its_spread() -> None:
    truth = fix_truth([10.0, 12.0, 30.0], [5.0, 4.0, 10.0])
    assert truth["speedup"] == 3.0
    assert (truth["speedup_min"], truth["speedup_max"]) == (2.0, 3.0)


def test_a_fix_is_offered_where_advice_names_it_and_judged_against_its_interval() -> None:
    items = [{"kind": "opportunity", "name": "cuda-graph", "text": "overhead cuda-graph",
              "predicted": 4.0, "interval": {"low": 3.0, "high": 5.0}, "max_speedup": None},
             {"kind": "opportunity", "name": "pin", "text": "pageable pin_memory",
              "predicted": 2.0, "interval": {"low": 1.5, "high": 2.5}, "max_speedup": None}]
    row = judge_fix(items, {"match": ["pin_memory"], "speedup": 3.0})
    assert (row["offered"], row["rank"], row["in_interval"]) == (True, 2, False)
    assert row["error"] == pytest.approx(2.0 / 3.0 - 1.0, abs=1e-4)
    assert judge_fix(items, {"match": ["tf32"], "speedup": 3.0})["offered"] is False
