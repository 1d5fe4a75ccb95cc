"""benchmarks/gpu/heldout_catalogue.py: every program and fix it times or records compiles at
full and tiny sizes and runs at tiny sizes on the CPU, each fix is named by a fix of the
catalogue, and one program goes through the whole one-command pipeline (timed, recorded,
tarred). Nothing here analyses the recordings: the set's predictions are read only after its
GPU truth is in."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest
import torch
from support.heldout_programs import compile_program

from autoprof.analysis.kinds import CATALOGUE_FIX_NAMES, FIX_NAMES

GPU_BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu"
sys.path.insert(0, str(GPU_BENCH))

import heldout_catalogue  # noqa: E402
from heldout_driver import timer_code  # noqa: E402

CASES = heldout_catalogue.CASES
SIDES = [(name, fix) for name, case in CASES.items() for fix in [None, *case["fixes"]]]


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, CASES[name], dry)


def test_ten_programs_each_fix_named_by_a_catalogue_fix() -> None:
    assert len(CASES) == 10
    names = set(FIX_NAMES) | set(CATALOGUE_FIX_NAMES)
    for case in CASES.values():
        assert case["fixes"]
        for fix in case["fixes"].values():
            assert fix["match"][0] in names, fix


@pytest.mark.slow
@pytest.mark.parametrize(("name", "fix"), SIDES)
def test_every_program_and_fix_runs_tiny_on_the_cpu(name: str, fix: str | None) -> None:
    precision = torch.get_float32_matmul_precision()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(timer_code(CASES[name], fix, "cpu", True), {})  # noqa: S102
    finally:
        torch.set_float32_matmul_precision(precision)
    got = json.loads(out.getvalue().strip().splitlines()[-1])
    assert got["ms_per_iter"] > 0


@pytest.mark.slow
def test_one_program_through_the_pipeline(tmp_path: Path) -> None:
    name = "policy_rollout_launch_bound"
    truth = heldout_catalogue.main(["--out", str(tmp_path), "--tiny", "--cases", name])
    entry = truth["cases"][name]
    assert list(truth["cases"]) == [name] and truth["meta"]["dry_run"]
    assert entry["as_written_ms_median"] > 0 and entry["fixes"]["cuda_graph"]["speedup"] > 0
    assert entry["record"]["error"] is None and entry["record"]["run"]
    assert not (tmp_path / "runs").exists()
    with tarfile.open(tmp_path / "runs.tar.gz") as tar:
        assert f"{entry['record']['run']}/manifest.json" in tar.getnames()
