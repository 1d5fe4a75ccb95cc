"""Training with a DataLoader: in the caller's loop (workers 0 and 4, pin_memory on and off)
and inside the decorated function. The dataset's Python transform makes loading the larger
cost at ``num_workers=0``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch
from common import (
    Ctx,
    SlowImages,
    SlowVectors,
    Variant,
    VariantBuilder,
    cnn,
    cycle_list,
    forever,
    graphed_train_step,
    loader,
    loader_warm_iters,
    mlp,
    repeat,
    train_step_fn,
)

Net = Literal["mlp", "cnn"]


@dataclass(frozen=True)
class LoaderSetup:
    net: Net
    workers: int
    pin: bool


def _dataset(ctx: Ctx, net: Net) -> torch.utils.data.Dataset[Any]:
    if net == "mlp":
        return SlowVectors(ctx.pick(1024, 32), 10, ctx.pick(500, 10))
    return SlowImages(ctx.pick(64, 8), 10, ctx.pick(1500, 10))


def _batch(ctx: Ctx, net: Net) -> int:
    return ctx.pick(256, 8) if net == "mlp" else ctx.pick(64, 4)


def _model_opt(ctx: Ctx, net: Net) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    if net == "mlp":
        model = mlp(ctx, ctx.pick(1024, 32), 4, out=10)
    else:
        model = cnn(ctx, (3, 32, 64, 128, 128) if not ctx.tiny else (3, 4, 8))
    return model, torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)


def _batches(ctx: Ctx, s: LoaderSetup) -> Iterator[Any]:
    data = loader(_dataset(ctx, s.net), _batch(ctx, s.net), s.workers, s.pin)
    return forever(lambda: data)


def _staged(ctx: Ctx, net: Net, count: int = 4) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A few batches made once and kept on the device: no loading, no copy between calls."""
    source = iter(loader(_dataset(ctx, net), _batch(ctx, net), 0, False))
    return [tuple(t.to(ctx.device) for t in next(source)) for _ in range(count)]


def _plain(ctx: Ctx, s: LoaderSetup) -> Variant:
    model, opt = _model_opt(ctx, s.net)
    step = train_step_fn(model, opt, ctx.device, non_blocking=s.pin)
    return Variant(step, _batches(ctx, s), warm_iters=loader_warm_iters(s.workers))


def _no_loader(ctx: Ctx, net: Net) -> Variant:
    model, opt = _model_opt(ctx, net)
    step = train_step_fn(model, opt, ctx.device, non_blocking=True)
    return Variant(step, cycle_list(_staged(ctx, net)),
                   note="batches already on the device: nothing between calls")


def _graphed(ctx: Ctx, s: LoaderSetup) -> Variant:
    model, opt = _model_opt(ctx, s.net)
    example = _staged(ctx, s.net, 1)[0]
    step = graphed_train_step(model, opt, example, ctx.device)
    return Variant(step, _batches(ctx, s), warm_iters=loader_warm_iters(s.workers),
                   note="whole step in one CUDA graph, same loader")


def caller_loop(net: Net, workers: int, pin: bool) -> Callable[[Ctx], dict[str, VariantBuilder]]:
    """``for batch in loader: train_step(batch)``; fixes: more workers with pinned memory and
    non_blocking copies, pinned memory alone, no loading between calls, a whole-step graph."""
    base = LoaderSetup(net, workers, pin)
    more = LoaderSetup(net, 8 if workers >= 4 else 4, True)

    def build(ctx: Ctx) -> dict[str, VariantBuilder]:
        variants: dict[str, VariantBuilder] = {
            "baseline": lambda: _plain(ctx, base),
            f"workers{more.workers}_pin_nonblocking": lambda: _plain(ctx, more),
        }
        if not pin:
            variants["pin_nonblocking"] = lambda: _plain(ctx, LoaderSetup(net, workers, True))
        variants["no_loader"] = lambda: _no_loader(ctx, net)
        if ctx.cuda:
            variants["cuda_graph"] = lambda: _graphed(ctx, base)
        return variants

    return build


# --- the DataLoader inside the decorated function ---------------------------------------------

def _inside(ctx: Ctx, batches: Iterator[Any], graph: bool = False) -> Variant:
    """``train_step()`` pulls its own batch: ``next(batches)`` inside the function."""
    model, opt = _model_opt(ctx, "mlp")
    if graph:
        inner = graphed_train_step(model, opt, _staged(ctx, "mlp", 1)[0], ctx.device)
    else:
        inner = train_step_fn(model, opt, ctx.device, non_blocking=True)

    def train_step(_: Any = None) -> torch.Tensor:
        return inner(next(batches))

    return Variant(train_step, repeat(None), warm_iters=10)


def inside(ctx: Ctx) -> dict[str, VariantBuilder]:
    """The loader inside the step (workers 0, no pinning); fixes as for the caller's loop."""
    w0, w4 = LoaderSetup("mlp", 0, False), LoaderSetup("mlp", 4, True)
    variants: dict[str, VariantBuilder] = {
        "baseline": lambda: _inside(ctx, _batches(ctx, w0)),
        "workers4_pin_nonblocking": lambda: _inside(ctx, _batches(ctx, w4)),
        "no_loader": lambda: _inside(ctx, cycle_list(_staged(ctx, "mlp"))),
    }
    if ctx.cuda:
        variants["cuda_graph"] = lambda: _inside(ctx, _batches(ctx, w0), graph=True)
    return variants
