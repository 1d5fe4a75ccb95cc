"""Host syncs in the middle of a training step whose GPU is busy (``.item()``, boolean-mask
indexing, ``.nonzero()``, ``.cpu()``, printing a CUDA tensor), a program that already replays
a CUDA graph, and a step on two streams."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import torch
import torch.nn.functional as F
from common import (
    Ctx,
    Variant,
    VariantBuilder,
    capture_graph,
    graphed_forward,
    graphed_train_step,
    mlp,
    repeat,
    train_step_fn,
)

SyncKind = Literal["item", "mask", "nonzero", "cpu", "print"]
Middle = Callable[[torch.Tensor], torch.Tensor | float]

_DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - the printing workload's stdout, for the process


class SplitNet(torch.nn.Module):
    """An MLP in two halves: the sync sits between them."""

    def __init__(self, ctx: Ctx) -> None:
        super().__init__()
        width = ctx.pick(1024, 32)
        self.first = mlp(ctx, width, 3)
        self.second = mlp(ctx, width, 3, out=10, seed=1)


def _loss_fn(middle: Middle) -> Callable[..., torch.Tensor]:
    def loss_fn(model: SplitNet, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        device = "cuda" if x.is_cuda else "cpu"
        with torch.autocast(device, dtype=torch.bfloat16, cache_enabled=False):
            h = model.first(x)
            extra = middle(h)
            logits = model.second(h)
        return F.cross_entropy(logits.float(), y) + extra

    return loss_fn


def _middles(ctx: Ctx) -> dict[tuple[SyncKind, str], Middle]:
    """What sits between the halves, per (kind, variant): the sync or its replacement."""
    log: list[Any] = []
    pinned = torch.zeros(ctx.pick(1024, 32), pin_memory=ctx.cuda)
    scalar = torch.zeros((), pin_memory=ctx.cuda)
    count = [0]

    def keep(value: Any) -> float:
        log.append(value)
        if len(log) > 64:
            del log[:32]
        return 0.0

    def mask_where(h: torch.Tensor) -> torch.Tensor:
        m = h > 0
        return 1e-4 * torch.where(m, h.float(), 0.0).square().sum() / m.sum().clamp(min=1)

    def rows_weighted(h: torch.Tensor) -> torch.Tensor:
        w = (h.float().mean(1) > 0).float()
        return 1e-4 * (h.float().square().mean(1) * w).sum() / w.sum().clamp(min=1)

    def print_every(h: torch.Tensor, every: int) -> float:
        count[0] += 1
        if count[0] % every == 0:
            print("activation", h.float().abs().mean(), file=_DEVNULL)
        return 0.0

    def print_pinned(h: torch.Tensor) -> float:
        value = float(scalar)  # the previous step's value, copied without blocking
        scalar.copy_(h.detach().float().abs().mean(), non_blocking=True)
        print("activation", value, file=_DEVNULL)
        return 0.0

    return {
        ("item", "baseline"): lambda h: keep(h.detach().float().abs().mean().item()),
        ("item", "keep_on_gpu"): lambda h: keep(h.detach().float().abs().mean()),
        ("item", "pinned_async"): lambda h: keep(
            scalar.copy_(h.detach().float().abs().mean(), non_blocking=True)),
        ("mask", "baseline"): lambda h: 1e-4 * h[h > 0].float().square().mean(),
        ("mask", "where"): mask_where,
        ("nonzero", "baseline"): lambda h: 1e-4 * h[
            (h.float().mean(1) > 0).nonzero().squeeze(1)].float().square().mean(),
        ("nonzero", "mask_weights"): rows_weighted,
        ("cpu", "baseline"): lambda h: keep(h.detach().float().mean(0).cpu()),
        ("cpu", "pinned_async"): lambda h: keep(
            pinned.copy_(h.detach().float().mean(0), non_blocking=True)),
        ("print", "baseline"): lambda h: print_every(h, 1),
        ("print", "every_10"): lambda h: print_every(h, 10),
        ("print", "pinned_async"): print_pinned,
    }


# the sync-free form each kind's whole-step graph captures
_GRAPHED = {"item": None, "mask": "where", "nonzero": "mask_weights", "cpu": None, "print": None}


def _sync_variant(ctx: Ctx, kind: SyncKind, batch: int, fix: str) -> Variant:
    model = SplitNet(ctx)
    x = torch.randn(ctx.pick(batch, 8), ctx.pick(1024, 32), device=ctx.device)
    y = torch.randint(0, 10, (x.shape[0],), device=ctx.device)
    middles = _middles(ctx)
    if fix == "graph_without_sync":
        replacement = _GRAPHED[kind]
        middle: Middle = middles[(kind, replacement)] if replacement else (lambda h: 0.0)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=True)
        return Variant(graphed_train_step(model, opt, (x, y), ctx.device, _loss_fn(middle)),
                       repeat((x, y)))
    middle = (lambda h: 0.0) if fix == "remove" else \
        middles[(kind, "baseline" if fix == "adamw_fused" else fix)]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fix == "adamw_fused")
    return Variant(train_step_fn(model, opt, ctx.device, True, _loss_fn(middle)), repeat((x, y)))


def sync_step(kind: SyncKind, batch: int = 8192) -> Callable[[Ctx], dict[str, VariantBuilder]]:
    """A bf16 MLP training step (``batch`` rows, 1024 wide, AdamW) with one host sync between
    its halves. Fixes: the sync removed, replaced by a sync-free equivalent, the sync-free
    step captured whole in a CUDA graph, and the optimizer fused."""

    def build(ctx: Ctx) -> dict[str, VariantBuilder]:
        fixes = ["baseline", "remove"] + [f for (k, f) in _middles(ctx)
                                          if k == kind and f != "baseline"]
        if ctx.cuda:
            fixes += ["graph_without_sync", "adamw_fused"]  # fused AdamW wants CUDA tensors
        return {f: partial(_sync_variant, ctx, kind, batch, f) for f in fixes}

    return build


# --- a program that already replays a CUDA graph --------------------------------------------------

def _graph_program(ctx: Ctx, fix: str) -> Variant:
    model: Any = mlp(ctx, ctx.pick(256, 16), ctx.pick(20, 2)).eval()
    if fix == "compile_in_graph":
        model = torch.compile(model)
    x = torch.randn(ctx.pick(32, 4), ctx.pick(256, 16), device=ctx.device)

    def forward(inp: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            out: torch.Tensor = model(inp)
        return out

    if fix == "eager" or not ctx.cuda:
        return Variant(forward, repeat(x), note="no graph: every kernel launched")
    if fix == "no_copy":
        return Variant(_replay_without_copy(forward, x), repeat(None),
                       note="input produced in the static buffer: the replay alone")
    return Variant(graphed_forward(forward, x), repeat(x))


def _replay_without_copy(forward: Callable[[torch.Tensor], Any], x: torch.Tensor
                         ) -> Callable[[Any], Any]:
    static = x.clone()
    graph, out = capture_graph(lambda: forward(static))

    def call(_: Any) -> Any:
        graph.replay()
        return out

    return call


def graph_program(ctx: Ctx) -> dict[str, VariantBuilder]:
    """The user replays a captured 20-layer MLP inference, copying each input in. Fixes: the
    input already in the static buffer (nothing but the replay), the model compiled inside the
    graph, and no graph at all (a negative control: slower)."""
    fixes = ["baseline", "eager"] + (["no_copy", "compile_in_graph"] if ctx.cuda else [])
    return {f: partial(_graph_program, ctx, f) for f in fixes}


# --- two streams ----------------------------------------------------------------------------------

def _two_streams(ctx: Ctx, fix: str) -> Variant:
    n = ctx.pick(1024, 16)
    gen = torch.Generator(device="cpu").manual_seed(3)
    ws = [torch.randn(n, n, generator=gen, dtype=torch.bfloat16).to(ctx.device) / n**0.5
          for _ in range(8)]
    x = torch.randn(n, n, generator=gen, dtype=torch.bfloat16).to(ctx.device)
    side = torch.cuda.Stream() if ctx.cuda else None  # type: ignore[no-untyped-call]
    two = side is not None and fix in ("baseline", "cuda_graph")

    def chain(h: torch.Tensor, weights: list[torch.Tensor]) -> torch.Tensor:
        for w in weights:
            h = torch.relu(h @ w)
        return h

    def step(inp: torch.Tensor) -> torch.Tensor:
        if not two or side is None:
            return chain(inp, ws[:4]) + chain(inp, ws[4:])
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            b = chain(inp, ws[4:])
        a = chain(inp, ws[:4])
        main.wait_stream(side)
        return a + b

    if fix in ("cuda_graph", "cuda_graph_one_stream"):
        return Variant(graphed_forward(step, x), repeat(x))
    return Variant(step, repeat(x))


def two_streams(ctx: Ctx) -> dict[str, VariantBuilder]:
    """Two independent 4-matmul chains (bf16, 1024) on two streams, joined. Fixes: one
    stream, the two-stream step in a CUDA graph, the one-stream step in a CUDA graph."""
    graphs = ["cuda_graph", "cuda_graph_one_stream"] if ctx.cuda else []
    fixes = ["baseline", "one_stream", *graphs]
    return {f: partial(_two_streams, ctx, f) for f in fixes}
