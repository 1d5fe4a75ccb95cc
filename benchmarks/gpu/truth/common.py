"""Shared pieces of the truth suite: the Variant shape, models, loaders, graph capture, timing.

A workload is a user's program: a function called once per iteration of the user's own loop
(``for batch in batches: step(batch)``). A :class:`Variant` is that program as written
(``baseline``) or with one fix applied by hand. Nothing here imports autoprof or starts
torch.profiler: ``record.py`` decorates the baseline's ``call`` itself, and
``ground_truth.py`` times the variants exactly as they are built here.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Ctx:
    """Where and how large: ``tiny`` shrinks every problem so a CPU runs it in seconds."""

    device: str
    tiny: bool

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    def pick(self, full: int, tiny: int) -> int:
        return tiny if self.tiny else full


@dataclass
class Variant:
    """One way to run the user's loop: ``call(next(batches))`` per iteration.

    ``warm_iters`` iterations are dropped at the start of every timed block (a DataLoader's
    workers prefetch while other variants run, so a block's first batches come for free).
    """

    call: Callable[[Any], Any]
    batches: Iterator[Any]
    warm_iters: int = 3
    note: str = ""
    keep: list[Any] = field(default_factory=list)  # objects that must outlive the variant


VariantBuilder = Callable[[], Variant]


def sync(ctx: Ctx) -> None:
    if ctx.cuda:
        torch.cuda.synchronize()


def forever(make_iter: Callable[[], Iterable[Any]]) -> Iterator[Any]:
    """``for batch in loader`` without an end: a new epoch when one runs out."""
    while True:
        yield from make_iter()


def repeat(value: Any) -> Iterator[Any]:
    while True:
        yield value


def cycle_list(values: list[Any]) -> Iterator[Any]:
    while True:
        yield from values


# --- models ----------------------------------------------------------------------------------

def mlp(ctx: Ctx, width: int, depth: int, out: int | None = None,
        seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, out or width))
    return torch.nn.Sequential(*layers).to(ctx.device)


def cnn(ctx: Ctx, channels: tuple[int, ...], classes: int = 10, seed: int = 0) -> torch.nn.Module:
    """conv-bn-relu blocks with a stride-2 conv every other block, then pool and a linear."""
    torch.manual_seed(seed)
    layers: list[torch.nn.Module] = []
    for i, (cin, cout) in enumerate(zip(channels, channels[1:], strict=False)):
        layers += [torch.nn.Conv2d(cin, cout, 3, stride=2 if i % 2 else 1, padding=1),
                   torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
               torch.nn.Linear(channels[-1], classes)]
    return torch.nn.Sequential(*layers).to(ctx.device)


# --- data ------------------------------------------------------------------------------------

def busy_python(work: int, index: int) -> int:
    """CPU work in Python (holds the GIL), like decoding or augmenting one sample."""
    acc = 0
    for i in range(work):
        acc += (i * index) % 7
    return acc


class SlowVectors(torch.utils.data.Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Feature vectors with a Python transform of ``work`` steps per sample."""

    def __init__(self, width: int, classes: int, work: int) -> None:
        self.width, self.classes, self.work = width, classes, work

    def __len__(self) -> int:
        return 1 << 24

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        acc = busy_python(self.work, index)
        x = torch.full((self.width,), float(acc % 5) - 2.0)
        return x, torch.tensor(index % self.classes)


class SlowImages(torch.utils.data.Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Images ``3 x side x side`` with a Python transform of ``work`` steps per sample."""

    def __init__(self, side: int, classes: int, work: int) -> None:
        self.side, self.classes, self.work = side, classes, work

    def __len__(self) -> int:
        return 1 << 24

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        acc = busy_python(self.work, index)
        x = torch.full((3, self.side, self.side), float(acc % 5) - 2.0)
        return x, torch.tensor(index % self.classes)


def loader(dataset: torch.utils.data.Dataset[Any], batch: int, workers: int,
           pin: bool) -> torch.utils.data.DataLoader[Any]:
    return torch.utils.data.DataLoader(dataset, batch_size=batch, num_workers=workers,
                                       pin_memory=pin, persistent_workers=workers > 0,
                                       shuffle=False, drop_last=True)


def loader_warm_iters(workers: int, prefetch_factor: int = 2) -> int:
    """Batches a paused DataLoader has ready when its variant's block starts, plus two."""
    return workers * prefetch_factor + 2 if workers else 3


# --- training steps ---------------------------------------------------------------------------

def classify_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits: torch.Tensor = model(x)
    return F.cross_entropy(logits, y)


def train_step_fn(model: torch.nn.Module, opt: torch.optim.Optimizer, device: str,
                  non_blocking: bool, loss_fn: Callable[..., torch.Tensor] = classify_loss
                  ) -> Callable[[Any], torch.Tensor]:
    """The user's decorated step: move the batch, forward, backward, optimizer step."""

    def train_step(batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = (t.to(device, non_blocking=non_blocking) for t in batch)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model, x, y)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        return loss.detach()

    return train_step


def capture_graph(body: Callable[[], Any], warmups: int = 3) -> tuple[torch.cuda.CUDAGraph, Any]:
    """``body`` captured the textbook way (warm up on a side stream, then capture)."""
    side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = body()
    return graph, out


def graphed_train_step(model: torch.nn.Module, opt: torch.optim.Optimizer,
                       example: tuple[torch.Tensor, ...], device: str,
                       loss_fn: Callable[..., torch.Tensor] = classify_loss
                       ) -> Callable[[Any], torch.Tensor]:
    """Whole-step CUDA graph (forward, backward, optimizer step) with static inputs copied in.

    The optimizer must be capturable (Adam/AdamW ``capturable=True``; SGD needs nothing).
    The returned call copies each batch into the static inputs, then replays: the copy counts.
    """
    static = [t.to(device).clone() for t in example]

    def body() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model, *static)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        return loss.detach()

    body()  # state (optimizer moments) allocated outside the graph
    graph, out = capture_graph(body)

    def train_step(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        for dst, src in zip(static, batch, strict=True):
            dst.copy_(src, non_blocking=True)
        graph.replay()
        loss: torch.Tensor = out
        return loss

    return train_step


def graphed_forward(fn: Callable[[torch.Tensor], Any], example: torch.Tensor
                    ) -> Callable[[torch.Tensor], Any]:
    """Inference captured in a CUDA graph; each call copies its input in, then replays."""
    static = example.clone()
    graph, out = capture_graph(lambda: fn(static))

    def call(x: torch.Tensor) -> Any:
        static.copy_(x, non_blocking=True)
        graph.replay()
        return out

    return call


# --- timing ----------------------------------------------------------------------------------

TimingMode = Literal["iter", "call"]


@dataclass
class Block:
    """Per-iteration times of one block, in ms: the whole iteration (start to next start, the
    loader included) and the function call alone. ``iter_ms``/``call_ms`` come from CUDA
    events (the first in an ``iter`` block, the second in a ``call`` block), the host clock's
    ``iter_host_ms``/``call_host_ms`` from every block."""

    mode: TimingMode = "iter"
    iter_ms: list[float] = field(default_factory=list)
    call_ms: list[float] = field(default_factory=list)
    iter_host_ms: list[float] = field(default_factory=list)
    call_host_ms: list[float] = field(default_factory=list)


def time_block(variant: Variant, iters: int, ctx: Ctx, mode: TimingMode = "iter") -> Block:
    """Run ``warm_iters + iters`` iterations, no sync inside; keep the last ``iters``.

    One CUDA event per iteration keeps the timing's own cost small: in an ``iter`` block at
    each iteration's start (and one at the end), in a ``call`` block before and after the call
    (two). Elapsed times are read after one sync at the end of the block.
    """
    for _ in range(variant.warm_iters):
        variant.call(next(variant.batches))
    sync(ctx)
    n = iters
    host = [0.0] * (3 * n + 1)
    ev: list[Any] = []
    if ctx.cuda:
        count = n + 1 if mode == "iter" else 2 * n
        ev = [torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
              for _ in range(count)]
    call = variant.call
    batches = variant.batches
    clock = time.perf_counter
    for i in range(n):
        host[3 * i] = clock()
        if ev and mode == "iter":
            ev[i].record()
        batch = next(batches)
        host[3 * i + 1] = clock()
        if ev and mode == "call":
            ev[2 * i].record()
        call(batch)
        if ev and mode == "call":
            ev[2 * i + 1].record()
        host[3 * i + 2] = clock()
    host[3 * n] = clock()
    if ev and mode == "iter":
        ev[n].record()
    sync(ctx)
    return _read_block(mode, n, host, ev)


def _read_block(mode: TimingMode, n: int, host: list[float], ev: list[Any]) -> Block:
    """A block's per-iteration times from its host clock readings and CUDA events."""
    block = Block(mode)
    for i in range(n):
        block.iter_host_ms.append((host[3 * i + 3] - host[3 * i]) * 1e3)
        block.call_host_ms.append((host[3 * i + 2] - host[3 * i + 1]) * 1e3)
    if ev and mode == "iter":
        block.iter_ms = [ev[i].elapsed_time(ev[i + 1]) for i in range(n)]
    elif ev:
        block.call_ms = [ev[2 * i].elapsed_time(ev[2 * i + 1]) for i in range(n)]
    elif mode == "iter":  # no device clock: the host's stands in
        block.iter_ms = list(block.iter_host_ms)
    else:
        block.call_ms = list(block.call_host_ms)
    return block


def quartiles(values: list[float]) -> dict[str, float]:
    """Median, first and third quartile and IQR of ``values`` (ms)."""
    if len(values) < 2:
        v = values[0] if values else float("nan")
        return {"median": v, "q1": v, "q3": v, "iqr": 0.0, "n": len(values)}
    q1, med, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": med, "q1": q1, "q3": q3, "iqr": q3 - q1, "n": len(values)}
