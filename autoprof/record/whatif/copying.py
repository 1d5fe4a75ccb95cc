"""Fresh copies of the user's arguments for every trial, of the same types as the originals.

A trial must never change the user's own values, and the function must see what it was given:
a ``dict`` subclass stays that subclass, a dataclass batch stays a dataclass, a numpy array is
copied (not shared), a namedtuple keeps its fields. Copies keep aliasing: an object passed
twice is copied once and passed twice.

- tensors: cloned on their device with their strides and ``requires_grad``;
- ``torch.nn.Module`` and ``torch.optim.Optimizer``: shared, like the state a function closes
  over (a copied model would no longer be the one its optimizer updates);
- numpy arrays: ``ndarray.copy()`` (subclass kept; object arrays deep-copied);
- dataclasses, namedtuples, lists, tuples, dicts, sets and their subclasses: rebuilt with
  copied contents (a dataclass or dict subclass through ``copy.copy`` first, so attributes
  outside its fields survive);
- numbers, strings, bytes, ``None``, enums, functions, classes: immutable, shared;
- anything else: ``copy.deepcopy``. An object that cannot be copied is refused with
  :class:`NotCopyable`, naming it and why: the fixes are not tried rather than tried on the
  user's own object.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import sys
import types
from typing import Any

_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), range, slice, enum.Enum,
              types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)


class NotCopyable(ValueError):
    """An argument the trials cannot copy; ``str()`` says which and why."""


def copy_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...],
                                                                     dict[str, Any]]:
    """Copies of a call's arguments (one memo for all: an object passed twice stays one)."""
    memo: dict[int, Any] = {}
    out_args = []
    for i, value in enumerate(args):
        out_args.append(_named(value, f"argument {i}", memo))
    return tuple(out_args), {k: _named(v, f"argument {k!r}", memo) for k, v in kwargs.items()}


def _named(value: Any, where: str, memo: dict[int, Any]) -> Any:
    try:
        return deep_copy(value, memo)
    except NotCopyable:
        raise
    except Exception as exc:
        raise NotCopyable(f"{where} ({type(value).__name__}) cannot be copied for the trials: "
                          f"{type(exc).__name__}: {exc}") from None


def deep_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """``value`` copied as described in the module doc."""
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, _IMMUTABLE) or _shared(value):
        return value
    out = _copy_new(value, memo)
    memo[id(value)] = out
    return out


def _shared(value: Any) -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    return isinstance(value, torch.nn.Module | torch.optim.Optimizer | torch.Generator
                      | torch.device | torch.dtype)


def _copy_new(value: Any, memo: dict[int, Any]) -> Any:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        from autoprof.record.whatif.call import clone_tensor

        return clone_tensor(value)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return copy.deepcopy(value, memo) if value.dtype.hasobject else value.copy(order="K")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dataclass(value, memo)
    if isinstance(value, tuple):
        return _tuple(value, memo)
    if isinstance(value, list | dict | set | frozenset):
        return _container(value, memo)
    return copy.deepcopy(value, memo)


def _dataclass(value: Any, memo: dict[int, Any]) -> Any:
    out = copy.copy(value)
    memo[id(value)] = out  # a field that refers back to the dataclass gets the copy
    for f in dataclasses.fields(value):
        if hasattr(value, f.name):
            object.__setattr__(out, f.name, deep_copy(getattr(value, f.name), memo))
    return out


def _tuple(value: tuple[Any, ...], memo: dict[int, Any]) -> Any:
    items = [deep_copy(v, memo) for v in value]
    if hasattr(value, "_fields"):  # namedtuple
        return type(value)(*items)
    return tuple(items) if type(value) is tuple else type(value)(items)


def _container(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, set | frozenset):
        return type(value)(deep_copy(v, memo) for v in value)
    out = copy.copy(value)  # same class, same attributes (a defaultdict keeps its factory)
    memo[id(value)] = out
    if isinstance(value, dict):
        dict.clear(out)
        for k, v in dict.items(value):
            dict.__setitem__(out, k, deep_copy(v, memo))
    else:
        list.__init__(out, [deep_copy(v, memo) for v in value])
    return out
