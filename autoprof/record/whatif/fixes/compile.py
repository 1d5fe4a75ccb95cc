"""``compile``: torch.compile in its default mode (fuses elementwise chains, fewer kernels)."""

from __future__ import annotations

from autoprof.record.whatif.call import Call
from autoprof.record.whatif.fixes.base import Applied, Fix


def dynamo_missing(call: Call) -> str | None:
    import torch

    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    try:
        import torch._dynamo as dynamo

        if not dynamo.is_dynamo_supported():
            return "torch.compile is not supported on this Python"
    except Exception as exc:  # an unusual torch build
        return f"torch.compile unavailable: {type(exc).__name__}: {exc}"
    return None


def _apply(call: Call) -> Applied:
    import torch

    return Applied(torch.compile(call.fn))


FIX = Fix(
    name="compile",
    doc="torch.compile(fn): fuses the function's ops into fewer, generated kernels",
    precondition=dynamo_missing,
    apply=_apply,
)
