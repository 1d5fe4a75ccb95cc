"""Output comparison: tolerance of the least precise dtype involved, NaNs, structure."""

from __future__ import annotations

import math

import torch

from autoprof.record.whatif.compare import TOLERANCE, compare_outputs


def test_float32_noise_within_tolerance_matches_and_reports_the_error():
    a = torch.tensor([1.0, 2.0, -4.0])
    b = a + torch.tensor([0.0, 2e-5, 0.0])
    c = compare_outputs(a, b)
    assert c.match and c.tolerance == TOLERANCE["float32"]
    assert math.isclose(c.max_abs_error, 2e-5, rel_tol=1e-2)


def test_float32_error_beyond_tolerance_does_not_match():
    a = torch.tensor([1.0, 2.0, -4.0])
    c = compare_outputs(a, a + 0.01)
    assert not c.match and "beyond tolerance" in c.problem


def test_bf16_compute_dtype_loosens_the_tolerance():
    a = torch.tensor([100.0, 200.0])
    b = a * (1 + 5e-3)
    assert not compare_outputs(a, b).match  # judged as float32
    assert compare_outputs(a, b, compute_dtype="bfloat16").match
    assert compare_outputs(a, b.bfloat16()).match  # a bf16 output is judged as bf16


def test_nans_must_sit_at_the_same_places():
    a = torch.tensor([1.0, float("nan")])
    assert compare_outputs(a, a.clone()).match
    c = compare_outputs(a, torch.tensor([float("nan"), 1.0]))
    assert not c.match and "NaN" in c.problem


def test_equal_infinities_match_and_do_not_blow_up_the_scale():
    a = torch.tensor([float("inf"), 1.0, -float("inf")])
    c = compare_outputs(a, a.clone())
    assert c.match and c.max_abs_error == 0.0
    assert not compare_outputs(a, torch.tensor([float("inf"), 1.5, -float("inf")])).match
    assert not compare_outputs(a, torch.tensor([1.0, 1.0, -float("inf")])).match


def test_integers_must_be_equal_and_structures_alike():
    assert compare_outputs(torch.tensor([1, 2]), torch.tensor([1, 2])).match
    assert not compare_outputs(torch.tensor([1, 2]), torch.tensor([1, 3])).match
    assert not compare_outputs((torch.ones(2),), (torch.ones(2), 1)).match
    assert not compare_outputs({"a": torch.ones(2)}, {"b": torch.ones(2)}).match
    assert not compare_outputs(torch.ones(2), torch.ones(3)).match


def test_nested_outputs_and_python_numbers():
    out = {"loss": 1.5, "logits": [torch.ones(2, 2)], "step": 3}
    same = {"loss": 1.5 + 1e-6, "logits": [torch.ones(2, 2)], "step": 3}
    assert compare_outputs(out, same).match
    assert not compare_outputs(out, {**same, "step": 4}).match
    assert not compare_outputs(out, {**same, "loss": 1.6}).match
