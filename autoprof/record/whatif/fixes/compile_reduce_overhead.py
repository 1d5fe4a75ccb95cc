"""``compile-reduce-overhead``: torch.compile(mode="reduce-overhead"), which adds CUDA graphs."""

from __future__ import annotations

from autoprof.record.whatif.call import Call
from autoprof.record.whatif.fixes.base import Applied, Fix, needs_cuda
from autoprof.record.whatif.fixes.compile import dynamo_missing


def _precondition(call: Call) -> str | None:
    return needs_cuda(call) or dynamo_missing(call)


def _apply(call: Call) -> Applied:
    import torch

    return Applied(torch.compile(call.fn, mode="reduce-overhead"))


FIX = Fix(
    name="compile-reduce-overhead",
    doc='torch.compile(fn, mode="reduce-overhead"): fused kernels replayed as a CUDA graph, '
        "one launch per call",
    precondition=_precondition,
    apply=_apply,
    cuda_only=True,
)
