"""``bf16``: autocast to bfloat16 (matmuls and convolutions in bf16, reductions kept wide)."""

from __future__ import annotations

import functools
from typing import Any

from autoprof.record.whatif.call import Call
from autoprof.record.whatif.fixes.base import Applied, Fix

_WIDE = ("float32", "float64")


def _precondition(call: Call) -> str | None:
    import torch

    floats = [t for t in call.tensors() if t.is_floating_point()]
    if not floats:
        return "no floating-point tensor among the inputs"
    if not any(str(t.dtype).removeprefix("torch.") in _WIDE for t in floats):
        return "the inputs are already in a 16-bit type"
    if call.device == "cuda" and not torch.cuda.is_bf16_supported():
        return "this GPU has no bfloat16 support"
    return None


def _apply(call: Call) -> Applied:
    import torch

    fn, device = call.fn, call.device

    @functools.wraps(fn)
    def autocast_bf16(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            return fn(*args, **kwargs)

    return Applied(autocast_bf16)


FIX = Fix(
    name="bf16",
    doc="torch.autocast(dtype=torch.bfloat16): matmuls and convolutions in bfloat16",
    precondition=_precondition,
    apply=_apply,
    compute_dtype="bfloat16",
)
