"""Cases with a known cause, beside the models: what the CPU findings must name.

- ``lazy_first_call``: a LazyLinear(4096 -> 4096) forward at batch 1, no warm-up and no wait
  step: the first profiled step initialises 16M weights once (``aten::uniform_``), a real
  cold start.
- ``compile_mlp``: a torch.compile'd MLP under autoprof's default 3 warm-up calls: the first
  warm-up call compiles (seconds), the profiled steps run the compiled code.
- ``seed64_threads2``: ``x @ w + b`` at 64x64 with 2 intra-op threads: on a loaded 2-core
  host each parallel region waits for a second core, so a 0.5 MFLOP product takes
  milliseconds instead of microseconds.
- ``seed64_threads1``: the same with 1 thread, the control.
- ``gpt2_train_threads2``, ``cnn_train_threads2``: the models' train steps with 2 intra-op
  threads (torch's default on 2 cores) on the same loaded host: steps that vary several-fold
  doing the same ops, beside the 1-thread recordings of the same steps.

Each case gives its recording options (``warmup`` calls, ``schedule``) and its intra-op thread
count; ``record.py`` applies them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from models import cnn_train, gpt2_train
from torch import nn


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    build: Callable[[], tuple[Callable[[Any], Any], Any]]
    warmup: int = 3
    schedule: dict[str, int] = field(default_factory=lambda: {"wait": 1, "warmup": 1, "active": 3})
    threads: int | None = None  # None: the thread count record.py was given


def lazy_first_call() -> tuple[Callable[[Any], Any], Any]:
    layer = nn.LazyLinear(4096)
    x = torch.randn(1, 4096)

    def step(batch: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return layer(batch)  # type: ignore[no-any-return]

    return step, x


def compile_mlp() -> tuple[Callable[[Any], Any], Any]:
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)).eval()
    compiled = torch.compile(model)

    def step(batch: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return compiled(batch)  # type: ignore[no-any-return]

    return step, torch.randn(16, 64)


def seed64() -> tuple[Callable[[Any], Any], Any]:
    gen = torch.Generator().manual_seed(0)
    w, b = torch.randn(64, 64, generator=gen), torch.randn(64, generator=gen)

    def step(x: torch.Tensor) -> torch.Tensor:
        return x @ w + b

    return step, torch.randn(64, 64, generator=gen)


CASES: dict[str, Case] = {c.name: c for c in (
    Case("lazy_first_call", "LazyLinear first call, no warm-up", lazy_first_call, warmup=0,
         schedule={"wait": 0, "warmup": 0, "active": 3}),
    Case("compile_mlp", "torch.compile'd MLP, default warm-up", compile_mlp),
    Case("seed64_threads2", "x @ w + b at 64x64, 2 intra-op threads", seed64, threads=2),
    Case("seed64_threads1", "x @ w + b at 64x64, 1 intra-op thread", seed64, threads=1),
    Case("gpt2_train_threads2", "transformers GPT-2 train step, 2 intra-op threads", gpt2_train,
         threads=2),
    Case("cnn_train_threads2", "torch.nn ResNet-style CNN train step, 2 intra-op threads",
         cnn_train, threads=2),
)}
