"""``bf16``: autocast to bfloat16 (matmuls and convolutions in bf16, reductions kept wide).

Autocast changes the float compute inside the function whatever its inputs are, so the fix
applies wherever float compute shows (float inputs, a module's parameters, float outputs):
a model fed integer token ids included."""

from __future__ import annotations

import functools
from typing import Any

from autoprof.record.whatif.call import Call, tensors_in
from autoprof.record.whatif.fixes.base import Applied, Fix

_WIDE = ("float32", "float64")


def float_tensors(call: Call) -> list[Any]:
    """Where the call's float compute shows: floating tensors among the inputs, the
    parameters of modules passed in, and the original's outputs (a model fed token ids
    computes in float and returns float logits)."""
    import torch

    found = [t for t in call.tensors() if t.is_floating_point()]
    for value in (*call.args, *call.kwargs.values()):
        if isinstance(value, torch.nn.Module):
            found += [p for p in value.parameters() if p.is_floating_point()]
    found += [t for t in tensors_in(call.reference) if t.is_floating_point()]
    return found


def _precondition(call: Call) -> str | None:
    import torch

    floats = float_tensors(call)
    if not floats:
        return "no floating-point compute: no float tensor among the inputs or the outputs"
    if not any(str(t.dtype).removeprefix("torch.") in _WIDE for t in floats):
        return "the inputs and outputs are already in a 16-bit type"
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
