"""A torch.compile'd module whose lines are known, recorded with inductor's provenance on
and its C++ kernels profiled (so that they are ops of the CPU trace): tests check that each
fused kernel is named by the line of the forward it came from.

The markers (``# LINE: <name>``) name the lines the tests look for.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("INDUCTOR_PROVENANCE", "1")  # before inductor's config is imported

import torch  # noqa: E402
import torch._inductor.config  # noqa: E402

from autoprof import autoprof  # noqa: E402

torch._inductor.config.cpp.enable_kernel_profile = True  # its kernels as ops in the trace
torch.set_num_threads(1)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.fc1(x))  # LINE: gelu
        return torch.tanh(self.fc2(h)) * 2.0 + 1.0  # LINE: tanh


MODEL = torch.compile(MLP())
X = torch.randn(32, 64)


def step() -> float:
    with torch.no_grad():
        return float(MODEL(X).sum())  # LINE: call


def main(out_dir: str) -> None:
    fn = autoprof(name="compiled_lines", out_dir=out_dir, warmup_calls=1,
                  schedule={"wait": 1, "warmup": 2, "active": 3})(step)
    for _ in range(7):  # 1 warm-up call, then wait 1 + warmup 2 + active 3
        fn()
    fn.autoprof_session.flush()


if __name__ == "__main__":
    main(sys.argv[1])
