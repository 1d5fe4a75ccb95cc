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
