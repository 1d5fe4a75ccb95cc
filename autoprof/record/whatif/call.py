"""The user's call as the fixes see it: the function, its arguments, where its tensors live,
and fresh copies of the arguments for every trial (a fix never touches the user's own)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Args = tuple[tuple[Any, ...], dict[str, Any]]


def map_tensors(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``value`` with every tensor inside lists, tuples, dicts and dataclasses replaced by
    ``fn(tensor)``; containers keep their types (a dict subclass, a namedtuple, a dataclass)."""
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, dict):
        out = copy.copy(value)
        for k, v in dict.items(value):
            dict.__setitem__(out, k, map_tensors(v, fn))
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        new = copy.copy(value)
        for f in dataclasses.fields(value):
            if hasattr(value, f.name):
                object.__setattr__(new, f.name, map_tensors(getattr(value, f.name), fn))
        return new
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
        return type(value)(*(map_tensors(v, fn) for v in value))
    if isinstance(value, list | tuple):
        return type(value)(map_tensors(v, fn) for v in value)
    return value


def tensors_in(value: Any) -> Iterator[Any]:
    """Every tensor inside ``value`` (lists, tuples, dicts, dataclasses), in order."""
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


@dataclass
class Call:
    """``fn(*args, **kwargs)`` plus what the fixes' preconditions ask about it."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    device: str = field(init=False)
    reference: Any = None  # the original function's output on fresh inputs (set by the trial)
    not_compared: str | None = None  # why the original's outputs cannot judge a fix
    draws_random: bool = False  # its outputs change with the RNG seed: it draws random numbers

    def __post_init__(self) -> None:
        devices = {t.device.type for t in tensors_in((self.args, self.kwargs))}
        self.device = "cuda" if "cuda" in devices else "cpu"

    def fresh(self) -> Args:
        """Copies of the arguments that keep their types (:mod:`copying`: tensors cloned on
        their device, modules shared); raises NotCopyable naming an argument it cannot copy."""
        from autoprof.record.whatif.copying import copy_args

        return copy_args(self.args, self.kwargs)

    def tensors(self) -> list[Any]:
        return list(tensors_in((self.args, self.kwargs)))
