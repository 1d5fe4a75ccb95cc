"""What a CUDA graph costs the host per call, measured without a profiler: the replay's
constants (`autoprof/analysis/metrics/replay/changes.py`).

Run on a CUDA machine from the repository root::

    python benchmarks/gpu/graph_launch_cost.py --out OUT

For graphs of 1, 2, 4, 16 and 64 tiny kernels (a bf16 add on 64 elements, far shorter on the
GPU than its launch), three host-bound loops, each ``--iters`` calls back to back with one
sync at the end, timed on the host clock, ``--rounds`` times interleaved:

- ``replay``: ``graph.replay()`` alone (what ``cudaGraphLaunch`` and its Python call cost);
- ``copy_replay``: ``static.copy_(x, non_blocking=True); graph.replay()`` (a user's graphed
  call: the batch copied into the static input, then the replay);
- ``eager``: the same kernels launched one by one (for scale: the launches a graph removes).

A loop's time per call is the host's cost of one call while the GPU keeps up (each kernel
takes about 2 us on the GPU). ``OUT/graph_launch_cost.json`` holds every round and, per loop
and size, the median per-call time in microseconds; the fit of ``replay`` against the kernel
count gives the launch's fixed cost and its cost per captured kernel, and ``copy_replay`` less
``replay`` the input copy's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

SIZES = (1, 2, 4, 16, 64)


def _loop_us(fn: Callable[[], Any], iters: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - start) / 1e3 / iters


def _build(kernels: int) -> dict[str, Callable[[], Any]]:
    x = torch.randn(64, device="cuda", dtype=torch.bfloat16)
    static = torch.zeros_like(x)

    def eager() -> torch.Tensor:
        y = static
        for _ in range(kernels):
            y = y + 1
        return y

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            eager()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        eager()

    def copy_replay() -> None:
        static.copy_(x, non_blocking=True)
        graph.replay()

    return {"replay": graph.replay, "copy_replay": copy_replay, "eager": eager}


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x: (a, b)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs)
    return my - b * mx, b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    loops = {k: _build(k) for k in SIZES}
    for fns in loops.values():  # warm every loop once
        for fn in fns.values():
            _loop_us(fn, 200)
    rounds: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        for k, fns in loops.items():
            for name, fn in fns.items():
                rounds.append({"kernels": k, "loop": name, "us": _loop_us(fn, args.iters)})
    medians = {name: {k: statistics.median(r["us"] for r in rounds
                                           if r["loop"] == name and r["kernels"] == k)
                      for k in SIZES} for name in ("replay", "copy_replay", "eager")}
    fixed_us, per_kernel_us = _fit([float(k) for k in SIZES], list(medians["replay"].values()))
    copy_us = statistics.median(medians["copy_replay"][k] - medians["replay"][k] for k in SIZES)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "iters": args.iters, "rounds": args.rounds, "median_us": medians,
              "replay_fixed_us": fixed_us, "replay_per_kernel_us": per_kernel_us,
              "input_copy_us": copy_us, "all": rounds}
    (args.out / "graph_launch_cost.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "all"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
