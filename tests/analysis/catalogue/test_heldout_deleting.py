"""benchmarks/gpu/heldout_deleting.py: every program and fix it times or records compiles, at
full and tiny sizes, each fix names words the deleting entries' advice uses, and --analyse
reads a finished OUT without writing into it."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest
from support.heldout_programs import compile_program

GPU_BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu"
sys.path.insert(0, str(GPU_BENCH))

import heldout_deleting  # noqa: E402


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(heldout_deleting.CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, heldout_deleting.CASES[name], dry)


def test_each_fix_is_matched_by_a_word_of_its_entry() -> None:
    words = {"channels-last", "zero-grad-none", "tensor-on-device", "cudnn.benchmark",
             "ddp-no-sync"}
    for case in heldout_deleting.CASES.values():
        for fix in case["fixes"].values():
            assert words & set(fix["match"])


def test_analyse_unpacks_into_its_own_folder(tmp_path: Path) -> None:
    out, into = tmp_path / "out", tmp_path / "into"
    (out / "runs" / "p").mkdir(parents=True)
    (out / "runs" / "p" / "x.txt").write_text("x")
    with tarfile.open(out / "runs.tar.gz", "w:gz") as tar:
        tar.add(out / "runs", arcname="runs")
    (out / "truth.json").write_text(json.dumps({"cases": {}}))
    got = heldout_deleting.analyse(out, into)
    assert got["totals"]["programs"] == 0
    assert (into / "runs" / "p" / "x.txt").read_text() == "x"
    assert (into / "compare.md").is_file() and not (out / "compare.md").exists()
