"""Output comparison: tolerance of the least precise dtype involved, NaNs, structure."""

from __future__ import annotations

import math

import pytest
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


def test_numpy_outputs_are_compared_like_tensors():
    import numpy as np

    a = np.linspace(-1, 1, 10, dtype=np.float32)
    c = compare_outputs(a, a + np.float32(1e-6))
    assert c.match and c.comparable and c.tolerance == TOLERANCE["float32"]
    assert not compare_outputs(a, a + 0.1).match
    assert compare_outputs({"ids": np.arange(4)}, {"ids": np.arange(4)}).match
    assert not compare_outputs(np.arange(4), np.arange(4)[::-1]).match  # negative strides
    assert compare_outputs(np.array(["a", "b"]), np.array(["a", "b"])).match
    assert not compare_outputs(np.array(["a", "b"]), np.array(["a", "c"])).match


def test_outputs_whose_equality_raises_cannot_be_compared_and_say_why():
    class Opaque:
        def __eq__(self, other):
            raise TypeError("no comparison for Opaque")

    c = compare_outputs({"state": Opaque()}, {"state": Opaque()})
    assert not c.comparable and not c.match
    assert c.problem == ("output['state']: Opaque outputs cannot be compared (== raised "
                         "TypeError: no comparison for Opaque)")


def test_a_function_with_incomparable_outputs_is_timed_and_reported_not_compared():
    from autoprof.record.whatif import try_fixes

    class Opaque:
        def __init__(self, t):
            self.t = t

        def __eq__(self, other):
            raise TypeError("ambiguous")

    _, trials = try_fixes(lambda x: Opaque(x * 2), (torch.ones(3),), {}, ["bf16"], samples=3)
    r = trials[0].result
    assert r.outputs_match is None and r.speedup is not None
    assert r.mismatch.startswith("outputs not compared: the outputs cannot be compared: "
                                 "output: Opaque outputs cannot be compared")


def test_dataclass_outputs_are_compared_field_by_field():
    import dataclasses

    @dataclasses.dataclass
    class Out:
        loss: torch.Tensor
        n: int

    assert compare_outputs(Out(torch.ones(2), 3), Out(torch.ones(2), 3)).match
    assert "output.loss" in compare_outputs(Out(torch.ones(2), 3),
                                            Out(torch.zeros(2), 3)).problem


def test_chunked_comparison_agrees_across_chunk_borders(monkeypatch):
    import autoprof.record.whatif.compare as cmp

    monkeypatch.setattr(cmp, "CHUNK_ELEMENTS", 3)
    a = torch.tensor([1.0, 2.0, 100.0, float("nan"), 5.0, -float("inf"), 7.0])
    b = a.clone()
    b[6] += 1e-3  # within tolerance only because of the scale (100) seen in an earlier chunk
    c = compare_outputs(a, b)
    assert c.match and c.max_abs_error == pytest.approx(1e-3, rel=1e-2)
    b[1] += 1.0
    assert not compare_outputs(a, b).match
    ints = torch.arange(10)
    assert not compare_outputs(ints, torch.cat([ints[:9], torch.tensor([0])])).match


def _peak_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM")


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmRSS")


def test_a_large_output_is_compared_in_bounded_extra_memory():
    """A 64 MB float32 output: the comparison's peak extra memory stays under 2x the output
    (whole-tensor float64 copies took over 8x). The peak is the process's resident high-water
    mark, reset just before (Linux: /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        _peak_rss_bytes()
    except OSError:
        pytest.skip("no resettable peak RSS on this system")
    a = torch.randn(16 * 1024 * 1024)
    b = a * (1 + 1e-6)
    size = a.numel() * a.element_size()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _rss_bytes()
    c = compare_outputs(a, b)
    extra = _peak_rss_bytes() - before
    assert c.match
    assert extra < 2 * size, f"peak extra {extra / 2**20:.0f} MiB, output {size / 2**20:.0f} MiB"
