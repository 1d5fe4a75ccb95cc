"""What a fix is: a name, a doc line, a precondition and an apply step.

``precondition(call)`` returns None when the fix can be tried, else the reason it cannot
("no CUDA device"). ``apply(call)`` returns an :class:`Applied`: the function to call instead
of the user's, how to prepare the arguments it is called with (untimed, like a user
converting their inputs once), and how a user would call it in a loop (``bind``: what is timed;
a CUDA graph copies the new inputs into its static ones and replays, without the general
wrapper that finds the tensors in any call's arguments). A fix whose timed call copies each
call's inputs in may also say how it runs on the very inputs it was prepared with
(``same_inputs_call``: a CUDA graph's replay alone, what a loop passing the same tensors each
call runs); the what-if times both. ``apply`` raises
:class:`NotApplicable` when it finds out late (a graph capture that fails); any other
exception is reported as the fix raising.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autoprof.record.whatif.call import Args, Call


class NotApplicable(Exception):  # noqa: N818 -- a result, not an error
    """The fix cannot be tried on this call; ``str()`` is the reason shown to the user."""


def _same(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Args:
    return args, kwargs


@dataclass(frozen=True)
class Applied:
    """``fn`` takes the user's arguments (profiled, compared); ``bind(args, kwargs)`` returns
    the zero-argument call that is timed, ``fn(*args, **kwargs)`` unless the fix says how a
    user would call it on these inputs. ``bind_same_inputs(args, kwargs)``: the call on those
    very inputs with nothing copied in, None for a fix whose one call is both."""

    fn: Callable[..., Any]
    prepare: Callable[[tuple[Any, ...], dict[str, Any]], Args] = _same
    user_call: Callable[[tuple[Any, ...], dict[str, Any]], Callable[[], Any]] | None = None
    same_inputs_call: Callable[[tuple[Any, ...], dict[str, Any]], Callable[[], Any]] | None = None

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], Any]:
        if self.user_call is not None:
            return self.user_call(args, kwargs)
        fn = self.fn
        return lambda: fn(*args, **kwargs)

    def bind_same_inputs(self, args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> Callable[[], Any] | None:
        if self.same_inputs_call is None:
            return None
        return self.same_inputs_call(args, kwargs)


@dataclass(frozen=True)
class Fix:
    name: str
    doc: str
    precondition: Callable[[Call], str | None]
    apply: Callable[[Call], Applied]
    compute_dtype: str | None = None  # the precision the fix computes in, for the comparison
    cuda_only: bool = False  # never suggested for a run without CUDA work
    # the fix rebuilt to draw random numbers as eager PyTorch does, for the output comparison
    # of a function that samples (dropout in train mode); None: the fix itself is compared
    same_rng: Callable[[Call], Callable[..., Any]] | None = None


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, for a result's ``error`` and ``reason``."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def needs_cuda(call: Call) -> str | None:
    """The reason a CUDA-only fix cannot run here, or None."""
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device"
    if call.device != "cuda":
        return "the inputs are not on a CUDA device"
    return None
