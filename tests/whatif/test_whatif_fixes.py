"""Each fix on CPU: its precondition, a fix that raises, a fix that changes the outputs, and
the user's state (grad mode, RNG, inputs) as it was afterwards."""

from __future__ import annotations

import random

import pytest
import torch

from autoprof.record.whatif import FIXES, try_fixes
from autoprof.record.whatif.trial import best


def _by_fix(trials):
    return {t.result.fix: t.result for t in trials}


def _add(x, w):
    return torch.relu(x @ w) + 1


def test_cuda_only_fixes_are_not_applicable_on_cpu_and_say_why():
    _, trials = try_fixes(_add, (torch.randn(4, 4), torch.randn(4, 4)), {},
                          ["cuda-graph", "compile-reduce-overhead"], samples=3)
    for r in _by_fix(trials).values():
        assert r.applicable is False and r.status == "not applicable"
        assert r.reason == "no CUDA device"
        assert r.fixed_us is None and r.speedup is None


def test_a_fix_that_raises_is_a_result_not_an_exception():
    def flatten_then_project(images, w):
        return images.view(images.shape[0], -1) @ w  # .view fails on channels-last strides

    images, w = torch.randn(2, 3, 4, 4), torch.randn(48, 5)
    _, trials = try_fixes(flatten_then_project, (images, w), {}, ["channels-last"], samples=3)
    r = trials[0].result
    assert r.applicable is True and r.status == "raised"
    assert r.error.startswith("RuntimeError: view size is not compatible")
    assert r.speedup is None and r.fixed_us is None
    assert best(trials) is None


def test_bf16_on_a_sensitive_computation_is_flagged_never_a_speedup():
    def centered(x, w):  # large common offset, small differences: bf16 keeps 8 mantissa bits
        y = x @ w
        return y - y.mean()

    x = 256.0 + torch.rand(16, 16)
    _, trials = try_fixes(centered, (x, torch.eye(16)), {}, ["bf16"], samples=3)
    r = trials[0].result
    assert r.status == "outputs differ" and r.outputs_match is False
    assert r.speedup is None and r.measured_speedup is not None
    assert r.max_abs_error > r.tolerance and r.tolerance == pytest.approx(3e-2)
    assert "changes the outputs" in r.reason
    assert best(trials) is None


def test_bf16_on_a_tolerant_computation_matches():
    x, w = torch.randn(16, 32), torch.randn(32, 8)
    _, trials = try_fixes(_add, (x, w), {}, ["bf16"], samples=3)
    r = trials[0].result
    assert r.outputs_match is True and 0 < r.max_abs_error <= r.tolerance * 2 * float(
        _add(x, w).abs().max())
    assert r.speedup is not None and r.status in ("faster", "slower", "cannot tell")


def test_inference_mode_needs_outputs_with_autograd_history():
    w = torch.randn(8, 8, requires_grad=True)

    def forward(x):
        return x @ w

    _, trials = try_fixes(forward, (torch.randn(4, 8),), {}, ["inference-mode"], samples=3)
    r = trials[0].result
    assert r.applicable and r.outputs_match is True and r.max_abs_error == 0.0

    _, trials = try_fixes(lambda x: x * 2, (torch.randn(4),), {}, ["inference-mode"], samples=3)
    r = trials[0].result
    assert not r.applicable and "no autograd history" in r.reason


def test_channels_last_needs_a_4d_input():
    _, trials = try_fixes(_add, (torch.randn(4, 4), torch.randn(4, 4)), {}, ["channels-last"],
                          samples=3)
    assert "no 4-D" in trials[0].result.reason
    conv = torch.nn.Conv2d(3, 4, 3)
    _, trials = try_fixes(lambda m, x: m(x), (conv, torch.randn(2, 3, 8, 8)), {},
                          ["channels-last"], samples=3)
    r = trials[0].result
    assert r.applicable and r.outputs_match is True, r
    assert conv.weight.is_contiguous()  # the user's module was deep-copied, not converted


@pytest.mark.parametrize("grad", [True, False])
def test_the_users_state_is_untouched(grad):
    w = torch.randn(8, 8, requires_grad=True)

    def noisy_inplace(x, scale):
        x.add_(torch.rand_like(x))  # mutates its input, draws from the RNG
        random.random()
        return (x @ w) * scale

    x = torch.randn(4, 8)
    x_before = x.clone()
    torch.manual_seed(123)
    random.seed(7)
    rng_before, py_before = torch.get_rng_state(), random.getstate()
    torch.set_grad_enabled(grad)
    try:
        try_fixes(noisy_inplace, (x,), {"scale": 2.0}, ["inference-mode", "bf16", "cuda-graph"],
                  samples=3)
        assert torch.is_grad_enabled() is grad
    finally:
        torch.set_grad_enabled(True)
    assert torch.equal(x, x_before) and x._version == 0
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert random.getstate() == py_before
    assert w.grad is None


def test_outputs_are_compared_on_the_same_random_stream():
    def dropout_like(x):
        return x * (torch.rand_like(x) > 0.5)

    _, trials = try_fixes(dropout_like, (torch.randn(64),), {}, ["bf16"], samples=3)
    assert trials[0].result.outputs_match is True  # same seed for the original and the fix


def test_unknown_fix_names_are_refused():
    with pytest.raises(ValueError, match="unknown fix"):
        try_fixes(_add, (torch.ones(2, 2), torch.ones(2, 2)), {}, ["jit"])


def test_every_fix_is_a_named_unit_with_a_doc_line():
    assert list(FIXES) == ["compile", "compile-reduce-overhead", "cuda-graph", "inference-mode",
                           "bf16", "channels-last"]
    for name, fix in FIXES.items():
        assert fix.name == name and fix.doc and "\n" not in fix.doc
        assert callable(fix.precondition) and callable(fix.apply)


def test_a_stateful_function_is_timed_but_its_outputs_are_not_compared():
    seen = torch.zeros(4)

    def step(x):  # like a training step: every call changes what the next returns
        seen.add_(1)
        return x + seen

    _, trials = try_fixes(step, (torch.ones(4),), {}, ["bf16"], samples=3)
    r = trials[0].result
    assert r.outputs_match is None and r.status in ("faster", "slower", "cannot tell")
    assert r.mismatch.startswith("outputs not compared: two calls of the original disagree")
    assert r.speedup is not None


def test_the_sync_reason_names_the_users_line():
    from autoprof.record.whatif.fixes.cuda_graph import _user_line

    def users_step(t):
        return t.item_that_syncs()  # an AttributeError stands in for torch's sync error

    try:
        users_step(torch.ones(1))
    except AttributeError as exc:
        where = _user_line(exc)
    assert where is not None
    assert where.startswith("test_whatif_fixes.py:") and "t.item_that_syncs()" in where


def test_graph_inputs_are_copied_only_when_a_call_brings_new_values():
    from autoprof.record.whatif.fixes.cuda_graph import _StaticInputs

    static = (torch.zeros(3), {"b": torch.zeros(2)})
    inputs = _StaticInputs(static)
    x, b = torch.ones(3), torch.full((2,), 2.0)
    inputs.refresh((x, {"b": b}))
    assert torch.equal(static[0], x) and torch.equal(static[1]["b"], b)
    copies = static[0]._version
    inputs.refresh((x, {"b": b}))  # the same, unchanged tensors: nothing to copy
    assert static[0]._version == copies
    x.add_(1)  # changed in place since the last call: copied again
    inputs.refresh((x, {"b": b}))
    assert static[0]._version > copies and torch.equal(static[0], x)
    with pytest.raises(ValueError, match="captured with 2 input tensors, this call passes 1"):
        inputs.refresh((x,))


def test_a_synchronising_call_is_named_by_its_line(monkeypatch):
    """torch.cuda is stubbed: the error is the one sync debug mode raises on a GPU."""
    from autoprof.record.whatif.call import Call
    from autoprof.record.whatif.fixes.cuda_graph import synchronises

    modes = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)

    def step(x):
        loss = x.sum()
        if x.numel():
            raise RuntimeError("called a synchronizing CUDA operation")  # as loss.item() would
        return loss

    reason = synchronises(Call(step, (torch.ones(2),), {}))
    assert reason.startswith("function synchronises with the host")
    assert "test_whatif_fixes.py:" in reason and "raise RuntimeError(" in reason
    assert modes == ["error", 0]  # the debug mode is put back
    assert synchronises(Call(lambda x: x * 2, (torch.ones(2),), {})) is None
