"""benchmarks/gpu/heldout_graph_fixes.py: its programs are the eight of the H100 catalogue and
deleting sets whose first advice was a CUDA graph, each with one fix, ``cuda_graph``, named by
that advice; every program and fix compiles at full and tiny sizes, and (slow) the dry run
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
GPU_BENCH = ROOT / "benchmarks" / "gpu"
sys.path.insert(0, str(GPU_BENCH))

import heldout_graph_fixes  # noqa: E402

CASES = heldout_graph_fixes.GRAPH_CASES
DATA = ROOT / "benchmarks" / "validation" / "data"


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, CASES[name], dry, recorded=False)


def test_the_eight_whose_first_advice_was_a_graph_each_have_one_graph_fix() -> None:
    """Eight programs of the two sets whose own fixes by hand hold no graph, each still
    offered a CUDA graph by the advice (its first at the recording; the forecaster's loop
    has come first since), each with the one fix this file adds."""
    offered = set()
    for folder in ("gpu_h100_heldout_catalogue", "gpu_h100_heldout_deleting"):
        rows = json.loads((DATA / folder / "compare.json").read_text())["cases"]
        own = json.loads((DATA / folder / "truth.json").read_text())["cases"]
        offered |= {name for name, row in rows.items()
                    if any(a["name"] == "cuda-graph" for a in row["advice_top5"])
                    and "cuda_graph" not in own[name]["fixes"]}
    assert set(CASES) <= offered and len(CASES) == 8
    assert_graph_fix_programs(CASES, heldout_graph_fixes.SOURCES)


@pytest.mark.slow
def test_the_dry_run_times_every_program_and_fix(tmp_path: Path) -> None:
    truth = heldout_graph_fixes.main(["--out", str(tmp_path), "--dry-run", "--no-record"])
    assert_dry_graph_truth(truth, CASES)
