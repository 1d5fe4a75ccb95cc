"""A user program whose lines are known: tests record it and check the lines named.

The markers (``# LINE: <name>``) name the lines the tests look for; the tests read their
numbers from this file, so editing it keeps them right.
"""

from __future__ import annotations

import sys

import torch

from autoprof import autoprof


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))  # LINE: block_forward


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


MODEL = Model()
X = torch.randn(32, 64)
BIG = torch.randn(512, 512)
torch.set_num_threads(1)  # no intra-op threads waiting for cores on a loaded machine
SCHEDULE = {"wait": 1, "warmup": 2, "active": 3}  # the lines step, then torch's warm-up


def step() -> float:
    y = MODEL(X)  # LINE: model_call
    slow = BIG @ BIG @ BIG  # LINE: slow_op
    acc = torch.zeros(4)
    for i in range(20):
        acc = acc + i  # LINE: loop_body
    return float((y.sum() + slow.mean() + acc.sum()).item())  # LINE: sync


def main(out_dir: str, source_lines: bool) -> None:
    fn = autoprof(name="known_lines", out_dir=out_dir, warmup_calls=1, schedule=SCHEDULE,
                  source_lines=source_lines)(step)
    for _ in range(7):  # 1 warm-up call, then wait 1 + warmup 2 + active 3
        fn()
    fn.autoprof_session.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] == "1")
