"""``inference-mode``: run under torch.inference_mode() when nothing needs the gradient."""

from __future__ import annotations

import functools
from typing import Any

from autoprof.record.whatif.call import Call, tensors_in
from autoprof.record.whatif.fixes.base import Applied, Fix


def _precondition(call: Call) -> str | None:
    import torch

    if not torch.is_grad_enabled():
        return "grad mode is already off"
    if not any(t.requires_grad for t in tensors_in(call.reference)):
        return ("the outputs carry no autograd history: either nothing records a graph, or the "
                "function uses its gradients itself (backward inside)")
    return None


def _apply(call: Call) -> Applied:
    import torch

    fn = call.fn

    @functools.wraps(fn)
    def in_inference_mode(*args: Any, **kwargs: Any) -> Any:
        with torch.inference_mode():
            return fn(*args, **kwargs)

    return Applied(in_inference_mode)


FIX = Fix(
    name="inference-mode",
    doc="torch.inference_mode(): no autograd graph is recorded, for calls whose outputs are "
        "never differentiated",
    precondition=_precondition,
    apply=_apply,
)
