"""benchmarks/gpu/heldout_fresh_graph_fixes.py: its programs are the four of the fresh
held-out set whose first advice was a CUDA graph that no hand fix timed, each with one fix,
``cuda_graph``; every program and fix compiles at full and tiny sizes, and (slow) the dry run
times them all on the CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.heldout_programs import (
    assert_dry_graph_truth,
    assert_graph_fix_programs,
    compile_program,
)

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))

import heldout_fresh_graph_fixes as fixes  # noqa: E402

CASES = fixes.GRAPH_CASES
FRESH = ROOT / "benchmarks" / "validation" / "data" / "gpu_h100_heldout_fresh"


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, CASES[name], dry, recorded=False)


def test_the_programs_whose_first_advice_was_an_untimed_graph() -> None:
    """The set's own fixes (`truth.json`, without the graphs timed after the advice) had no
    CUDA graph where the first advice (`compare.json`) is one."""
    rows = json.loads((FRESH / "compare.json").read_text())["cases"]
    own = json.loads((FRESH / "truth.json").read_text())["cases"]
    first_graph = {name for name, row in rows.items()
                   if (row["first_advice"] or {}).get("name") == "cuda-graph"
                   and "cuda_graph" not in own[name]["fixes"]}
    assert set(CASES) == first_graph and len(CASES) == 4
    assert_graph_fix_programs(CASES, fixes.SOURCES)


@pytest.mark.slow
def test_the_dry_run_times_every_program_and_fix(tmp_path: Path) -> None:
    truth = fixes.main(["--out", str(tmp_path), "--dry-run", "--no-record"])
    assert_dry_graph_truth(truth, CASES)
