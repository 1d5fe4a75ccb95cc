"""benchmarks/gpu/heldout_fresh.py: every program and fix it times or records compiles at full
and tiny sizes, and each fix is named by a fix autoprof can offer. Nothing here runs or
analyses the programs: the set's predictions are read only after its GPU truth is in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.heldout_programs import compile_program

from autoprof.analysis.kinds import CATALOGUE_FIX_NAMES, FIX_NAMES

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "gpu"))

import heldout_fresh  # noqa: E402

CASES = heldout_fresh.CASES


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, CASES[name], dry)


def test_ten_programs_each_with_two_fixes_or_more_named_by_autoprofs_fixes() -> None:
    assert len(CASES) == 10
    names = set(FIX_NAMES) | set(CATALOGUE_FIX_NAMES)
    for name, case in CASES.items():
        assert len(case["fixes"]) >= 2, name
        for fix in case["fixes"].values():
            assert fix["match"][0] in names, (name, fix)


def test_every_graph_fix_has_the_capture_helper_in_its_setup() -> None:
    graphs = [name for name, case in CASES.items() if "cuda_graph" in case["fixes"]]
    assert len(graphs) >= 3
    for name in graphs:
        assert "def capture(step" in CASES[name]["setup"], name
