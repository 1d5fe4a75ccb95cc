"""benchmarks/gpu/heldout_third.py: every program and fix it times or records compiles at full
and tiny sizes, each fix is named by a fix autoprof can offer (or is one that no catalogue fix
names), and the whole set goes through the one-command pipeline at tiny sizes on the CPU
(every program and fix timed, every program recorded, the truth written, the runs tarred).
Nothing here analyses the recordings: the set's predictions are read only after its GPU truth
is in."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from support.heldout_programs import (
    assert_fixes_named,
    assert_graph_fixes_capture,
    assert_tiny_truth,
    compile_program,
)

from autoprof.analysis.kinds import CATALOGUE_FIX_NAMES, FIX_NAMES

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "gpu"))

import heldout_third  # noqa: E402

CASES = heldout_third.CASES

UNNAMED = {("r2plus1d_clips_nchw", "cudnn_benchmark")}
"""Fixes a careful engineer would try that no catalogue fix is known to name: judged by their
other match words only."""


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, CASES[name], dry)


def test_eight_programs_each_with_two_fixes_or_more_named_by_autoprofs_fixes() -> None:
    assert len(CASES) == 8
    assert_fixes_named(CASES, UNNAMED, set(FIX_NAMES) | set(CATALOGUE_FIX_NAMES))


def test_every_graph_fix_has_the_capture_helper_in_its_setup() -> None:
    assert_graph_fixes_capture(CASES, at_least=4)


def test_no_program_shares_a_name_with_an_earlier_held_out_set() -> None:
    import heldout_catalogue
    import heldout_fresh
    import heldout_next

    earlier = set(heldout_next.CASES) | set(heldout_fresh.CASES) | set(heldout_catalogue.CASES)
    assert not set(CASES) & earlier


def _setup(name: str, fixed: str | None = None) -> dict[str, Any]:
    """The program's setup run at tiny sizes on the CPU: its names."""
    import torch

    names: dict[str, Any] = {"torch": torch, "DEVICE": "cpu", "CUDA": False, "DRY": True,
                             "FIXED": fixed}
    exec(CASES[name]["setup"], names)  # noqa: S102 - the benchmark's own program text
    return names


def test_the_batched_viterbi_finds_the_loops_paths() -> None:
    import torch

    names = _setup("bilstm_crf_viterbi_loop")
    with torch.inference_mode():
        for ids, mask, lengths in names["batches"]:
            emissions = names["model"].emissions(ids)
            one_by_one = names["decode_loop"](emissions, mask, lengths)
            batched = names["decode_batched"](emissions, mask)
            for row, (path, n) in enumerate(zip(one_by_one, lengths, strict=True)):
                assert torch.equal(path, batched[row, :n]), (row, n)


def test_the_biases_made_on_the_device_or_once_equal_the_hosts() -> None:
    import torch

    names = _setup("protein_host_alibi")
    for _, _, lengths, lengths_dev in names["batches"]:
        positions, bias = names["biases_host"](lengths)
        for other in (names["biases_on_device"](lengths), names["biases_cached"](lengths_dev)):
            assert torch.equal(other[0], positions)
            assert torch.equal(other[1], bias)


@pytest.mark.slow
def test_every_program_and_fix_runs_tiny_through_the_pipeline(tmp_path: Path) -> None:
    truth = heldout_third.main(["--out", str(tmp_path), "--tiny"])
    assert_tiny_truth(truth, CASES, tmp_path)
