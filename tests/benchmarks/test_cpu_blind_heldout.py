"""benchmarks/cpu_blind_heldout.py: every program and fix it times or records compiles at full
and tiny sizes, each fix is named first by a fix autoprof can offer, the six programs cover the
bugs the set is for, each rewritten computation gives what the program as written gives, and
the whole set goes through the driver at tiny sizes (every program and fix timed, every program
recorded, the truth written). Nothing here analyses the recordings."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.heldout_programs import compile_program

from autoprof.analysis.kinds import CATALOGUE_FIX_NAMES, FIX_NAMES

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import cpu_blind_heldout  # noqa: E402

CASES = cpu_blind_heldout.CASES

COVERED = {"inference-mode", "batched-dataset", "loader-workers", "compile-dynamic",
           "vectorise", "fused-optimizer", "channels-last", "bf16-autocast"}
"""The fixes the set is written to need, each the first match word of some fix."""


@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_program_and_fix_compiles(name: str, dry: bool) -> None:
    compile_program(name, CASES[name], dry)


def test_six_programs_each_fix_named_first_by_an_autoprof_fix() -> None:
    assert len(CASES) == 6
    names = set(FIX_NAMES) | set(CATALOGUE_FIX_NAMES)
    firsts = set()
    for name, case in CASES.items():
        assert case["fixes"], name
        for label, fix in case["fixes"].items():
            assert len(fix["match"]) >= 2, (name, label)
            assert fix["match"][0] in names, (name, label, fix["match"][0])
            firsts.add(fix["match"][0])
    assert COVERED <= firsts, COVERED - firsts


def test_no_program_shares_a_name_with_an_earlier_cpu_set() -> None:
    import cpu_catalogue_heldout
    import cpu_heldout
    import cpu_loader_heldout

    earlier = (set(cpu_heldout.CASES) | set(cpu_catalogue_heldout.CASES)
               | set(cpu_loader_heldout.CASES))
    data = Path(__file__).resolve().parents[1] / "data"
    fixtures = {p.name for p in (data / "cpu_catalogue").iterdir()}
    fixtures |= {p.name for p in (data / "cpu_models").iterdir()}
    assert not set(CASES) & (earlier | fixtures)


def _setup(name: str, fixed: str | None = None) -> dict[str, Any]:
    """The program's setup run at tiny sizes on the CPU: its names."""
    import torch

    names: dict[str, Any] = {"torch": torch, "DEVICE": "cpu", "CUDA": False, "DRY": True,
                             "FIXED": fixed}
    exec(CASES[name]["setup"], names)  # noqa: S102 - the benchmark's own program text
    return names


def test_the_scores_under_inference_mode_equal_those_with_autograd() -> None:
    import torch

    names = _setup("gru_session_recommender_grad")
    assert torch.equal(names["recommend_inference"](), names["recommend"]())
    assert torch.equal(names["recommend_no_grad"](), names["recommend"]())


def test_the_batched_windows_equal_the_per_sample_windows_collated() -> None:
    import torch
    from torch.utils.data import default_collate

    names = _setup("sensor_windows_loader")
    idx = [0, 7, 3, names["COUNT"] - 1]
    x_one, y_one = default_collate([names["Windows"]()[i] for i in idx])
    x_all, y_all = names["BatchedWindows"]().__getitems__(idx)
    torch.testing.assert_close(x_all, x_one, rtol=1e-4, atol=1e-5)
    assert torch.equal(y_all, y_one)
    assert x_all.shape == (len(idx), 2 * names["C"], names["WIN"])


def test_the_vectorised_keypoint_loss_and_its_gradient_equal_the_loop() -> None:
    import torch

    names = _setup("keypoint_loss_loop")
    names["visible"][0, 0] = False
    pred = (torch.randn(names["B"], 2 * names["K"]) * 2).requires_grad_()
    loop = names["loss_loop"](pred)
    (g_loop,) = torch.autograd.grad(loop, pred)
    vec = names["loss_vectorised"](pred)
    (g_vec,) = torch.autograd.grad(vec, pred)
    torch.testing.assert_close(vec, loop)
    torch.testing.assert_close(g_vec, g_loop)
    assert g_loop[0, :2].abs().sum() == 0 and g_loop.abs().sum() > 0


def test_the_multi_tensor_adams_train_as_the_per_parameter_one() -> None:
    import torch

    trained = []
    for fixed in (None, "foreach", "fused"):
        torch.manual_seed(0)
        names = _setup("narrow_resmlp_adam_loop", fixed)
        for _ in range(3):
            exec(CASES["narrow_resmlp_adam_loop"]["base"], names)  # noqa: S102
        # a Linear's bias before BatchNorm has a gradient of rounding noise only, which Adam
        # scales to steps of the learning rate whatever its sign: those biases are left out
        trained.append(torch.cat([p.detach().flatten()
                                  for k, p in names["model"].named_parameters()
                                  if not k.endswith("lin.bias")]))
    torch.testing.assert_close(trained[1], trained[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(trained[2], trained[0], rtol=1e-5, atol=1e-6)


def test_the_channels_last_denoiser_gives_the_nchw_loss() -> None:
    import torch

    losses = []
    for fixed in (None, "channels_last"):
        torch.manual_seed(0)
        names = _setup("denoiser_cnn_nchw_fp32", fixed)
        exec(CASES["denoiser_cnn_nchw_fp32"]["base"], names)  # noqa: S102
        losses.append(names["loss"].detach())
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_the_dynamic_point_encoder_gives_the_eager_log_probabilities() -> None:
    import torch

    for fixed in ("dynamic", "mark_dynamic"):
        names = _setup("pointcloud_compile_static", fixed)
        with torch.no_grad():
            for _ in range(2):
                pts = names["next_scene"]()
                torch.testing.assert_close(names["encode"](pts), names["net"](pts),
                                           rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_every_program_and_fix_runs_tiny_through_the_driver(tmp_path: Path) -> None:
    truth = cpu_blind_heldout.main(["--out", str(tmp_path), "--dry-run"])
    assert truth == json.loads((tmp_path / "truth.json").read_text())
    assert set(truth["cases"]) == set(CASES)
    assert truth["meta"]["dry_run"] and truth["meta"]["rounds"] == 1
    for name, entry in truth["cases"].items():
        for side, rows in entry["rounds"].items():
            assert len(rows) == 1 and rows[0].get("ms_per_iter", 0) > 0, (name, side, rows)
            assert rows[0]["profiler_free"], (name, side)
        assert set(entry["fixes"]) == set(CASES[name]["fixes"]), name
        assert entry["record"]["error"] is None and entry["record"]["run"], name
        assert (tmp_path / entry["record"]["run"] / "manifest.json").is_file(), name
