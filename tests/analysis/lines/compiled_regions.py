"""torch.compile'd code beside eager code, with lines that are known: a compiled MLP called
from one line, an eager op on the next, and a compiled function with a graph break called
from a third; recorded with source lines. Small tensors, so that dynamo's and AOT's
wrappers hold much of the steps' op time (as on a GPU). Tests check the line of every op.

    python compiled_regions.py OUT_DIR [provenance]

With ``provenance``, inductor keeps its kernels' forward lines and profiles its C++
kernels (so they are ops of the trace). The markers (``# LINE: <name>``) name the lines.
"""

from __future__ import annotations

import os
import sys

if "provenance" in sys.argv[2:]:
    os.environ.setdefault("INDUCTOR_PROVENANCE", "1")  # before inductor's config is imported

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.config  # noqa: E402

from autoprof import autoprof  # noqa: E402

torch._inductor.config.cpp.enable_kernel_profile = "provenance" in sys.argv[2:]
torch.set_num_threads(1)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.fc1(x))  # LINE: gelu
        return torch.tanh(self.fc2(h)) * 2.0 + 1.0  # LINE: tanh


@torch.compiler.disable
def eager_sort(y: torch.Tensor) -> torch.Tensor:
    return torch.sort(y).values  # runs eagerly inside broken(): a graph break


@torch.compile
def broken(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x) * 3.0
    z = eager_sort(y)
    return torch.cos(z) + 1.0


MODEL = torch.compile(MLP())
X = torch.randn(8, 16)
Y = torch.randn(64)


def step() -> float:
    with torch.no_grad():
        out = MODEL(X)  # LINE: call
        s = torch.cumsum(Y, 0)  # LINE: eager
        b = broken(Y)  # LINE: broken
    return float(out.sum() + s.sum() + b.sum())  # LINE: read


def main(out_dir: str) -> None:
    fn = autoprof(name="compiled_regions", out_dir=out_dir, warmup_calls=1,
                  schedule={"wait": 1, "warmup": 2, "active": 3})(step)
    for _ in range(7):  # 1 warm-up call, then wait 1 + warmup 2 + active 3
        fn()
    fn.autoprof_session.flush()


if __name__ == "__main__":
    main(sys.argv[1])
