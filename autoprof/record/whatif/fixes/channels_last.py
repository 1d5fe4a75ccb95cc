"""``channels-last``: 4-D inputs (and modules passed in) in torch.channels_last memory format."""

from __future__ import annotations

import copy
from typing import Any

from autoprof.record.whatif.call import Args, Call, map_tensors
from autoprof.record.whatif.fixes.base import Applied, Fix


def _precondition(call: Call) -> str | None:
    if not any(t.dim() == 4 and t.is_floating_point() for t in call.tensors()):
        return "no 4-D floating-point input (channels-last is for NCHW convolution inputs)"
    return None


def _to_channels_last(value: Any) -> Any:
    import torch

    if isinstance(value, torch.nn.Module):  # the user's module is never converted in place
        # (Module.to's stubs omit memory_format)
        return copy.deepcopy(value).to(memory_format=torch.channels_last)  # type: ignore[call-overload]

    def convert(t: Any) -> Any:
        if t.dim() != 4:
            return t
        out = t.detach().contiguous(memory_format=torch.channels_last)
        return out.requires_grad_(t.requires_grad) if t.is_leaf else out

    return map_tensors(value, convert)


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Args:
    return (tuple(_to_channels_last(a) for a in args),
            {k: _to_channels_last(v) for k, v in kwargs.items()})


def _apply(call: Call) -> Applied:
    return Applied(call.fn, prepare=_prepare)


FIX = Fix(
    name="channels-last",
    doc="inputs in torch.channels_last (NHWC) memory format, which cuDNN and oneDNN "
        "convolutions prefer",
    precondition=_precondition,
    apply=_apply,
)
