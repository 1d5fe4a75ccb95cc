"""The user's call as the fixes see it: the function, its arguments, where its tensors live,
and fresh copies of the arguments for every trial (a fix never touches the user's own)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Args = tuple[tuple[Any, ...], dict[str, Any]]


def map_tensors(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``value`` with every tensor inside lists, tuples and dicts replaced by ``fn(tensor)``."""
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
        return type(value)(*(map_tensors(v, fn) for v in value))
    if isinstance(value, list | tuple):
        return type(value)(map_tensors(v, fn) for v in value)
    return value


def tensors_in(value: Any) -> Iterator[Any]:
    """Every tensor inside ``value`` (lists, tuples, dicts), in order."""
    found: list[Any] = []

    def keep(t: Any) -> Any:
        found.append(t)
        return t

    map_tensors(value, keep)
    return iter(found)


def clone_tensor(t: Any) -> Any:
    """A copy with the same values, dtype, device, strides and ``requires_grad``."""
    out = t.detach().clone(memory_format=_memory_format(t))
    return out.requires_grad_(t.requires_grad) if t.is_leaf else out


def _memory_format(t: Any) -> Any:
    import torch

    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last) \
            and not t.is_contiguous():
        return torch.channels_last
    return torch.preserve_format


def _copy_value(value: Any) -> Any:
    import torch

    if isinstance(value, torch.nn.Module):
        return value  # shared, like state the function closes over (a fix that changes a
        # module, channels-last, converts its own deep copy)
    return map_tensors(value, clone_tensor)


@dataclass
class Call:
    """``fn(*args, **kwargs)`` plus what the fixes' preconditions ask about it."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    device: str = field(init=False)
    reference: Any = None  # the original function's output on fresh inputs (set by the trial)
    unstable: str | None = None  # why two calls of the original disagree, when they do

    def __post_init__(self) -> None:
        devices = {t.device.type for t in tensors_in((self.args, self.kwargs))}
        self.device = "cuda" if "cuda" in devices else "cpu"

    def fresh(self) -> Args:
        """Copies of the arguments: tensors cloned (in lists, tuples, dicts), the rest shared."""
        return tuple(_copy_value(a) for a in self.args), \
            {k: _copy_value(v) for k, v in self.kwargs.items()}

    def tensors(self) -> list[Any]:
        return list(tensors_in((self.args, self.kwargs)))
