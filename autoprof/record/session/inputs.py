"""What a decorated call's arguments hold on the GPU: the bytes a CUDA graph of the call would
copy into its static inputs on every replay.

Read once, on the first warm-up call, before it is timed: a tensor argument, or a tensor in a
tuple, list or dict argument (a batch), one level deep. Tensors on the CPU are not counted (a
graph cannot read them: the call's own copy to the device is in the trace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from autoprof.record.session.driver import torch_module


def _tensors(values: Iterable[Any]) -> Iterable[Any]:
    tensor = torch_module().Tensor
    for value in values:
        if isinstance(value, tensor):
            yield value
        elif isinstance(value, tuple | list):
            yield from (v for v in value if isinstance(v, tensor))
        elif isinstance(value, Mapping):
            yield from (v for v in value.values() if isinstance(v, tensor))


def _is_cuda(tensor: Any) -> bool:
    try:
        return bool(tensor.is_cuda)
    except Exception:
        return False


def cuda_input_bytes(args: tuple[Any, ...], kwargs: Mapping[str, Any],
                     counted: Callable[[Any], bool] = _is_cuda) -> int:
    """The bytes of the CUDA tensors (``counted``) among ``args`` and ``kwargs``, one level
    deep; a tensor that cannot say its size (a subclass whose accessors raise) counts 0."""
    return sum(_nbytes(t) for t in _tensors((*args, *kwargs.values())) if counted(t))


def _nbytes(tensor: Any) -> int:
    try:
        return int(tensor.numel()) * int(tensor.element_size())
    except Exception:  # a user's tensor subclass: its size is not worth the call's failure
        return 0


def describe_inputs(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[str]:
    """What the decorated call was called with, one entry an argument (keyword ones named):
    a tensor's dtype and shape (``float32[256, 64]``), a tuple, list or dict of them one level
    deep, any other value's type name. Never the values themselves (they may be private)."""
    described = [_describe(v, deep=True) for v in args]
    described += [f"{k}={_describe(v, deep=True)}" for k, v in kwargs.items()]
    return described


def _describe(value: Any, deep: bool) -> str:
    if isinstance(value, torch_module().Tensor):
        try:
            dtype = str(value.dtype).removeprefix("torch.")
            return f"{dtype}[{', '.join(str(int(d)) for d in value.shape)}]"
        except Exception:  # a user's tensor subclass whose accessors raise
            return type(value).__name__
    if deep and isinstance(value, tuple | list):
        inner = ", ".join(_describe(v, deep=False) for v in value)
        return f"{type(value).__name__}({inner})"
    if deep and isinstance(value, Mapping):
        inner = ", ".join(f"{k}: {_describe(v, deep=False)}" for k, v in value.items())
        return f"{type(value).__name__}({inner})"
    return type(value).__name__


def read_inputs(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[int, list[str]]:
    """The call's CUDA input bytes and its arguments described (what the manifest keeps)."""
    return cuda_input_bytes(args, kwargs), describe_inputs(args, kwargs)
