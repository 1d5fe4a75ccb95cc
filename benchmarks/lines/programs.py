"""Programs whose source lines are known, recorded by ``gpu_lines.py`` one per process:

    python benchmarks/lines/programs.py CASE OUT_DIR {0,1}

CASE is one of :data:`CASES`; the last argument turns ``source_lines`` off (0) or on (1).
Each records one run folder under ``OUT_DIR/CASE`` (CUDA when available, else CPU; the
CUDA-graph case needs CUDA). The markers (``# LINE: <name>``) name the lines the checks look
for; ``gpu_lines.py`` reads their numbers from this file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import torch

from autoprof import autoprof

DEV = "cuda" if torch.cuda.is_available() else "cpu"
ACTIVE = 3
SCHEDULE = {"wait": 1, "warmup": 2, "active": ACTIVE}  # the lines step, then torch's warm-up
WARMUP_CALLS = 2
CALLS = WARMUP_CALLS + 3 + ACTIVE + 1  # warm-up calls, wait, lines, warm-up, active, one after


def _record(name: str, out: str, lines: bool, step: Callable[..., Any],
            batches: Any = None) -> None:
    fn: Any = autoprof(name=name, out_dir=out, warmup_calls=WARMUP_CALLS, schedule=SCHEDULE,
                       source_lines=lines)(step)
    if batches is None:
        for _ in range(CALLS):
            fn()
    else:
        for batch in batches:  # LINE: loader
            fn(batch)
    fn.autoprof_session.flush()


def sync(out: str, lines: bool) -> None:
    """A matmul, then a scalar read: on a GPU the read waits for the matmul."""
    x = torch.randn(2048, 2048, device=DEV)

    def step() -> float:
        y = x @ x
        return float(y.sum().item())  # LINE: sync

    _record("sync", out, lines, step)


class _Rows(torch.utils.data.Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64 * CALLS

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.full((1024,), float(i))


def loader(out: str, lines: bool) -> None:
    """The caller's loop takes its batches from a DataLoader (in this process): the
    collate's ops between the calls are named by the loop's line."""
    model = torch.nn.Linear(1024, 1024).to(DEV)
    batches = torch.utils.data.DataLoader(_Rows(), batch_size=64, num_workers=0)

    def step(batch: torch.Tensor) -> Any:
        with torch.no_grad():
            return model(batch.to(DEV)).sum()

    _record("loader", out, lines, step, batches)


def slow_op(out: str, lines: bool) -> None:
    """Two matmuls: one small, one 64x its work; the big one is the slow op."""
    small = torch.randn(512, 512, device=DEV)
    big = torch.randn(2048, 2048, device=DEV)

    def step() -> torch.Tensor:
        s = small @ small  # LINE: fast_op
        b = big @ big  # LINE: slow_op
        return s.sum() + b.sum()

    _record("slow_op", out, lines, step)


class _MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(512, 2048)
        self.fc2 = torch.nn.Linear(2048, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.fc1(x))  # LINE: compiled_gelu
        return torch.tanh(self.fc2(h)) * 2.0 + 1.0  # LINE: compiled_out


def compiled(out: str, lines: bool) -> None:
    """A torch.compile'd MLP (inductor): its fused kernels, and the line that calls it."""
    model = torch.compile(_MLP().to(DEV))
    x = torch.randn(256, 512, device=DEV)

    def step() -> Any:
        with torch.no_grad():
            return model(x)  # LINE: compiled_call

    _record("compiled", out, lines, step)


def cuda_graph(out: str, lines: bool) -> None:
    """A captured MLP replayed with ``graph.replay()``: the replay's kernels."""
    model = _MLP().to(DEV)
    static_x = torch.randn(256, 512, device=DEV)
    side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_y = model(static_x)

    def step() -> Any:
        graph.replay()  # LINE: graph_replay
        return static_y.sum()

    _record("cuda_graph", out, lines, step)


def reduce_overhead(out: str, lines: bool) -> None:
    """``torch.compile(mode="reduce-overhead")``: the compiled graph replayed as a CUDA graph
    from inside compiled code (on CPU inductor skips the CUDA graphs, dynamo's counter
    ``cudagraph_skips``, and runs the default mode's code)."""
    model = torch.compile(_MLP().to(DEV), mode="reduce-overhead")
    x = torch.randn(256, 512, device=DEV)

    def step() -> Any:
        with torch.no_grad():
            return model(x)  # LINE: ro_call

    _record("reduce_overhead", out, lines, step)


def backward(out: str, lines: bool) -> None:
    """A training step: on a GPU autograd's backward runs on its device thread, where no
    user line encloses it; its ops take the lines of the forward ops that recorded them."""
    model = _MLP().to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512, device=DEV)

    def step() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()  # LINE: bw_loss
        loss.backward()  # LINE: bw_backward
        opt.step()  # LINE: bw_step
        return loss.detach()

    _record("backward", out, lines, step)


CASES: dict[str, Callable[[str, bool], None]] = {
    "sync": sync, "loader": loader, "slow_op": slow_op, "compiled": compiled,
    "cuda_graph": cuda_graph, "reduce_overhead": reduce_overhead, "backward": backward}


def main() -> None:
    case, out, lines = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    torch.manual_seed(0)
    if DEV == "cpu":
        torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    CASES[case](out, lines)


if __name__ == "__main__":
    main()
