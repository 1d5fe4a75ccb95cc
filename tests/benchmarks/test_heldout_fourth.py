"""benchmarks/gpu/heldout_fourth.py: every program and fix it times or records compiles at full
and tiny sizes, each fix is named by a fix autoprof can offer (or is one that no catalogue fix
names), each rewritten computation gives what the program as written gives, and the whole set
goes through the one-command pipeline at tiny sizes on the CPU (every program and fix timed,
every program recorded, the truth written, the runs tarred). Nothing here analyses the
recordings: the set's predictions are read only after its GPU truth is in."""

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

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"))

import heldout_fourth  # noqa: E402

CASES = heldout_fourth.CASES

UNNAMED = {("ctc_pcm16_pageable", "int16_copy")}
"""Fixes a careful engineer would try that no catalogue fix is known to name: judged by their
other match words only."""

FUSED_CHAIN = "fuse-elementwise"
"""The catalogue's fix that fuses a chain of elementwise ops (``torch.compile`` of the chain,
a fused library op): this set's pointwise-chain programs are matched by it."""


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, CASES[name], dry)


def test_eight_programs_each_with_two_fixes_or_more_named_by_autoprofs_fixes() -> None:
    assert len(CASES) == 8
    assert FUSED_CHAIN in CATALOGUE_FIX_NAMES
    assert_fixes_named(CASES, UNNAMED, set(FIX_NAMES) | set(CATALOGUE_FIX_NAMES))
    fused = [n for n, case in CASES.items()
             if any(f["match"][0] == FUSED_CHAIN for f in case["fixes"].values())]
    assert len(fused) >= 2, fused


def test_every_graph_fix_has_the_capture_helper_in_its_setup() -> None:
    assert_graph_fixes_capture(CASES, at_least=3)


def test_no_program_shares_a_name_with_an_earlier_held_out_set() -> None:
    import heldout_catalogue
    import heldout_fresh
    import heldout_next
    import heldout_third

    earlier = (set(heldout_next.CASES) | set(heldout_fresh.CASES)
               | set(heldout_catalogue.CASES) | set(heldout_third.CASES))
    assert not set(CASES) & earlier


def _setup(name: str, fixed: str | None = None) -> dict[str, Any]:
    """The program's setup run at tiny sizes on the CPU: its names."""
    import torch

    names: dict[str, Any] = {"torch": torch, "DEVICE": "cpu", "CUDA": False, "DRY": True,
                             "FIXED": fixed}
    exec(CASES[name]["setup"], names)  # noqa: S102 - the benchmark's own program text
    return names


def test_the_fused_norm_and_gate_equal_the_hand_chains() -> None:
    import torch

    names = _setup("llama_rope_rmsnorm_fp32")
    x, weight = torch.randn(2, 8, 16), torch.rand(16) + 0.5
    gate, up = torch.randn(2, 8, 24), torch.randn(2, 8, 24)
    torch.testing.assert_close(names["rms_norm_fused"](x, weight),
                               names["rms_norm_by_hand"](x, weight))
    torch.testing.assert_close(names["swiglu_fused"](gate, up),
                               names["swiglu_by_hand"](gate, up))


def test_the_library_loss_equals_the_hand_written_one() -> None:
    import torch

    names = _setup("roadseg_focal_dice_items")
    logits = torch.randn(2, 3, 32, 32) * 3
    target = (torch.rand(2, 3, 32, 32) < 0.2).float()
    by_hand = names["focal_dice_by_hand"](logits, target)
    library = names["focal_dice_library"](logits, target)
    for a, b in zip(by_hand, library, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_the_closed_form_ge2e_loss_equals_the_loop() -> None:
    import torch

    names = _setup("ge2e_speaker_loop")
    with torch.no_grad():
        e = names["model"](names["batches"][0])
        torch.testing.assert_close(names["ge2e_vectorised"](e), names["ge2e_loop"](e))


def test_every_copy_of_the_pcm_feeds_the_model_the_same_waveform() -> None:
    import torch

    names = _setup("ctc_pcm16_pageable")
    fed: list[torch.Tensor] = []
    names["train"] = lambda wav, y: fed.append(wav)
    for call in ("as_written()", "pinned_float()", "int16_then_convert(clips, False)",
                 "int16_then_convert(pinned_clips, True)"):
        names["seen"][0] = 0
        exec(call, names)  # noqa: S102 - the benchmark's own program text
    assert len(fed) == 4 and fed[0].dtype == torch.float32
    assert fed[0].abs().max() > 0.01
    for other in fed[1:]:
        assert torch.equal(other, fed[0])


def test_the_batched_augmentation_equals_the_per_patch_one_without_noise() -> None:
    import torch

    names = _setup("ct_patch_loader")
    augment, P = names["augment"], names["P"]
    patches = torch.randn(3, P, P, P) * 500
    flips = torch.tensor([[True, False, True], [False, False, False], [False, True, True]])
    gamma = torch.tensor([0.8, 1.0, 1.2]).view(3, 1, 1, 1)
    batched = augment(patches, flips, gamma, 0.0)
    for i in range(3):
        one = augment(patches[i][None], flips[i][None], gamma[i][None], 0.0)
        torch.testing.assert_close(one[0], batched[i])


def test_the_labels_and_mask_made_on_the_device_equal_the_hosts() -> None:
    import torch

    names = _setup("clip_towers_host_labels")
    for host, device in zip(names["host_made"](), names["device_made"](), strict=True):
        assert torch.equal(host, device)


@pytest.mark.slow
def test_every_program_and_fix_runs_tiny_through_the_pipeline(tmp_path: Path) -> None:
    truth = heldout_fourth.main(["--out", str(tmp_path), "--tiny"])
    assert_tiny_truth(truth, CASES, tmp_path)
