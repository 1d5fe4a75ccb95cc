"""``compile``: torch.compile in its default mode (fuses elementwise chains, fewer kernels)."""

from __future__ import annotations

from typing import Any

from autoprof.record.whatif.call import Call
from autoprof.record.whatif.fixes.base import Applied, Fix


def dynamo_missing(call: Call) -> str | None:
    import torch

    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    try:
        import torch._dynamo as dynamo

        if not dynamo.is_dynamo_supported():  # type: ignore[attr-defined]
            return "torch.compile is not supported on this Python"
    except Exception as exc:  # an unusual torch build
        return f"torch.compile unavailable: {type(exc).__name__}: {exc}"
    return None


def _apply(call: Call) -> Applied:
    import torch

    return Applied(torch.compile(call.fn))


def same_rng(call: Call) -> Any:
    """The function compiled with inductor's ``fallback_random``: its random ops (dropout in
    train mode) draw from the eager generator in eager order, so on the same seed they give the
    original's numbers; only the outputs are compared through it, never the time."""
    import torch

    return torch.compile(call.fn, options={"fallback_random": True})


FIX = Fix(
    name="compile",
    doc="torch.compile(fn): fuses the function's ops into fewer, generated kernels",
    precondition=dynamo_missing,
    apply=_apply,
    same_rng=same_rng,
)
