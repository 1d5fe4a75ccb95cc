"""``cuda-graph``: capture one call in a CUDA graph (static inputs), then replay it.

Replaying costs one launch for the whole call, so a function made of many small kernels stops
paying the host's launch cost per kernel. A call that synchronises with the host (``.item()``,
``.cpu()``, printing a tensor) cannot be captured; the precondition finds that by running the
call once under ``torch.cuda.set_sync_debug_mode("error")`` and names the user's line.

What is timed is the graph as a user's loop calls it (:func:`replay_loop`): the new inputs
copied into the static ones, then ``graph.replay()``; and beside it, as a loop that passes the
same tensors each call runs it (:func:`replay_same`): ``graph.replay()`` alone, the static
inputs holding the call's values (copied in once, untimed). At 64x64 the three copies cost
more than the launches the graph saves, so the two differ by several times.

The general wrapper (``Applied.fn``, which finds the tensors in any call's arguments and skips
unchanged ones) is what the best fix is profiled and compared with; its Python walk over the
arguments (about 6 µs a call) is not the fix's cost.
"""

from __future__ import annotations

import functools
import traceback
from typing import Any

from autoprof.record.whatif.call import Call, tensors_in
from autoprof.record.whatif.fixes.base import Applied, Fix, NotApplicable, first_line, needs_cuda

CAPTURE_WARMUP = 3
_LIBRARY_PARTS = ("/torch/", "/autoprof/record/whatif/", "/site-packages/", "/dist-packages/")


def _user_line(exc: BaseException) -> str | None:
    """``file:line `code``` of the innermost frame outside torch and autoprof."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not any(part in f.filename.replace("\\", "/") for part in _LIBRARY_PARTS)]
    if not frames:
        return None
    f = frames[-1]
    where = f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}"
    return f"{where} `{f.line}`" if f.line else where


def synchronises(call: Call) -> str | None:
    """Why the call cannot be captured because it waits for the GPU, or None."""
    import torch

    args, kwargs = call.fresh()
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        call.fn(*args, **kwargs)
    except RuntimeError as exc:
        if "synchroniz" not in str(exc):
            return None  # not a sync: let the capture report it
        where = _user_line(exc)
        return ("function synchronises with the host (.item(), .cpu(), .tolist(), a tensor in "
                "an if): " + (f"at {where}" if where else first_line(exc)))
    finally:
        torch.cuda.set_sync_debug_mode(previous)
        torch.cuda.synchronize()
    return None


def _precondition(call: Call) -> str | None:
    return needs_cuda(call) or synchronises(call)


class _StaticInputs:
    """The captured graph's input tensors, refreshed from each call's arguments. A tensor that
    is the very one copied last time, unmodified since (same ``_version``), is not copied
    again: replaying on unchanged inputs costs no copy kernels."""

    def __init__(self, static: Any) -> None:
        self.static = list(tensors_in(static))
        self.last: list[tuple[Any, int]] = []

    def refresh(self, new: Any) -> None:
        sources = list(tensors_in(new))
        if len(sources) != len(self.static):
            raise ValueError(f"the graph was captured with {len(self.static)} input tensors, "
                             f"this call passes {len(sources)}")
        seen = [(t, t._version) for t in sources]
        if len(seen) == len(self.last) and all(
                a is b and va == vb for (a, va), (b, vb) in zip(seen, self.last, strict=True)):
            return
        for dst, src in zip(self.static, sources, strict=True):
            if dst is not src:
                dst.detach().copy_(src.detach())
        self.last = [(t, t._version) for t in sources]


def _apply(call: Call) -> Applied:
    import torch

    fn = call.fn
    static_args, static_kwargs = call.fresh()
    side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(CAPTURE_WARMUP):
            fn(*static_args, **static_kwargs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            static_out = fn(*static_args, **static_kwargs)
    except Exception as exc:
        try:
            torch.cuda.synchronize()
        except RuntimeError:
            pass  # the failed capture's own error, already being reported
        raise NotApplicable(f"graph capture failed: {first_line(exc)}") from None
    inputs = _StaticInputs((static_args, static_kwargs))

    @functools.wraps(fn)
    def replay(*args: Any, **kwargs: Any) -> Any:
        inputs.refresh((args, kwargs))
        graph.replay()
        return static_out

    replay.graph = graph  # type: ignore[attr-defined]  # keeps the captured memory alive

    def user_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return replay_loop(graph, inputs.static, (args, kwargs), static_out)

    def same_inputs_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return replay_same(graph, inputs.static, (args, kwargs), static_out)

    return Applied(replay, user_call=user_call, same_inputs_call=same_inputs_call)


def replay_loop(graph: Any, static: list[Any], new: Any, static_out: Any) -> Any:
    """The graph called as a user's loop calls it: each call copies the new inputs into the
    static ones (every time: the copy is part of the fix's cost) and replays. The tensors are
    paired once, here, not on every call."""
    pairs = _pairs(static, new)

    def call() -> Any:
        for dst, src in pairs:
            dst.copy_(src)
        graph.replay()
        return static_out

    return call


def replay_same(graph: Any, static: list[Any], new: Any, static_out: Any) -> Any:
    """The graph as a loop that passes the same tensors each call runs it: the inputs copied
    into the static ones once, here (untimed), then each call ``graph.replay()`` alone."""
    for dst, src in _pairs(static, new):
        dst.copy_(src)

    def call() -> Any:
        graph.replay()
        return static_out

    return call


def _pairs(static: list[Any], new: Any) -> list[tuple[Any, Any]]:
    """(static, new) tensor pairs, detached, the static ones that are the new ones left out."""
    sources = list(tensors_in(new))
    if len(sources) != len(static):
        raise ValueError(f"the graph was captured with {len(static)} input tensors, "
                         f"this call passes {len(sources)}")
    return [(dst.detach(), src.detach()) for dst, src in zip(static, sources, strict=True)
            if dst is not src]


FIX = Fix(
    name="cuda-graph",
    doc="torch.cuda.graphs: the whole call captured once and replayed, one launch per call "
        "instead of one per kernel",
    precondition=_precondition,
    apply=_apply,
    cuda_only=True,
)
