"""What-if on CPU models: train-mode dropout compared on the same random numbers, bf16 for a
model fed token ids, no CUDA-only fix suggested on a CPU run."""

from __future__ import annotations

import pytest
import torch

from autoprof.record.whatif import FIXES, try_fixes, what_if
from autoprof.record.whatif.fixes.base import Applied, Fix


def _own_rng_fix(with_same_rng: bool) -> Fix:
    """A fix that draws its random numbers from its own generator (as inductor's kernels
    do), with or without a variant that draws as eager does."""

    def apply(call):
        gen = torch.Generator().manual_seed(1234)

        def own(x):
            return x * (torch.rand(x.shape, generator=gen) > 0.5)

        return Applied(own)

    return Fix("own-rng", "its own RNG", lambda c: None, apply,
               same_rng=(lambda call: call.fn) if with_same_rng else None)


def _dropout_like(x):
    return x * (torch.rand_like(x) > 0.5)


def test_a_sampling_function_is_compared_through_the_fixs_same_rng_variant(monkeypatch):
    monkeypatch.setitem(FIXES, "own-rng", _own_rng_fix(with_same_rng=True))
    _, trials = try_fixes(_dropout_like, (torch.randn(256),), {}, ["own-rng"], samples=3)
    assert trials[0].result.outputs_match is True, trials[0].result

    monkeypatch.setitem(FIXES, "own-rng", _own_rng_fix(with_same_rng=False))
    _, trials = try_fixes(_dropout_like, (torch.randn(256),), {}, ["own-rng"], samples=3)
    assert trials[0].result.status == "outputs differ"  # without it the draws differ


def test_a_function_that_does_not_sample_is_compared_through_the_fix_itself(monkeypatch):
    calls = []

    def same_rng(call):
        calls.append(1)
        return call.fn

    fix = Fix("plain", "no RNG", lambda c: None, lambda c: Applied(c.fn), same_rng=same_rng)
    monkeypatch.setitem(FIXES, "plain", fix)
    _, trials = try_fixes(lambda x: x * 2, (torch.randn(8),), {}, ["plain"], samples=3)
    assert trials[0].result.outputs_match is True and calls == []


@pytest.mark.slow
def test_compile_on_a_train_mode_block_with_dropout_matches():
    import torch._inductor.config as inductor_config

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(0.3),
                                torch.nn.GELU()).train()

    def forward(x):
        return block(x)

    # the config's own patch puts the setting back (monkeypatch's undo deletes it)
    with inductor_config.patch({"cpp.threads": 1}):
        _, trials = try_fixes(forward, (torch.randn(8, 16),), {}, ["compile"], samples=3)
    r = trials[0].result
    assert r.outputs_match is True, r
    assert r.status != "outputs differ" and r.max_abs_error <= 1e-4


class TokenModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)
        self.head = torch.nn.Linear(16, 50)

    def forward(self, ids):
        return self.head(self.emb(ids))


def test_bf16_applies_to_a_model_fed_token_ids():
    model = TokenModel()
    ids = torch.randint(0, 50, (4, 8))
    _, trials = try_fixes(lambda t: model(t), (ids,), {}, ["bf16"], samples=3)
    r = trials[0].result
    assert r.applicable is True, r.reason
    assert r.tolerance == pytest.approx(3e-2) and r.fixed_us is not None
    # the same with the model passed as an argument
    _, trials = try_fixes(lambda m, t: m(t), (model, ids), {}, ["bf16"], samples=3)
    assert trials[0].result.applicable is True


def test_bf16_is_not_applicable_without_float_compute():
    _, trials = try_fixes(lambda t: t * 2 + 1, (torch.arange(6),), {}, ["bf16"], samples=3)
    r = trials[0].result
    assert r.applicable is False
    assert r.reason == "no floating-point compute: no float tensor among the inputs or the outputs"


@pytest.mark.slow
def test_a_cpu_run_gets_no_cuda_only_fix_suggested():
    from support.reports import report

    summary = report(is_cuda=False, verdict="overhead-bound",
                     opportunities=[{"cause": "host_launch"}], diagnostics=[])
    results = what_if(lambda x: x + 1, (torch.ones(4),), {}, "auto", report=summary, samples=3)
    tried = [r["fix"] for r in results]
    assert "cuda-graph" not in tried and "compile-reduce-overhead" not in tried
    assert tried[0] == "compile"


def test_a_same_rng_variant_that_fails_falls_back_to_the_fixs_own_output(monkeypatch):
    def broken(call):
        raise RuntimeError("cannot build the variant")

    fix = _own_rng_fix(with_same_rng=False)
    monkeypatch.setitem(FIXES, "own-rng", Fix(fix.name, fix.doc, fix.precondition, fix.apply,
                                              same_rng=broken))
    _, trials = try_fixes(_dropout_like, (torch.randn(256),), {}, ["own-rng"], samples=3)
    r = trials[0].result
    assert r.status == "outputs differ" and r.fixed_us is not None  # measured, not "raised"
