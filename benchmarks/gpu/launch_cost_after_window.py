"""Does a finished profiling window leave kernel launches slower for the rest of the process?

Run on a CUDA machine from the repository root, one fresh process per mode::

    PYTHONPATH=. python benchmarks/gpu/launch_cost_after_window.py --mode autoprof --out OUT

A host-bound loop (100 independent 64x64 bf16 ``x @ w + b``: 200 small kernels a call) is
timed with CUDA events (median of 30 calls) before any profiler ran, right after a profiling
window ended, and again after ``--pause`` seconds. Modes: ``none`` (no profiler: the drift of
the machine itself), ``torch`` (a hand-written ``torch.profiler.profile`` with CPU and CUDA
activities around 5 calls), ``autoprof`` (``@autoprof`` with its default schedule).
``OUT/launch_cost_<mode>.json`` holds the three medians and their ratios to "before".
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from autoprof import autoprof as profile_fn


def _operands() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    xs = torch.randn(100, 64, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(64, device="cuda", dtype=torch.bfloat16)
    return xs, w, b


def many(xs: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> list[torch.Tensor]:
    return [torch.matmul(xs[i], w) + b for i in range(xs.shape[0])]


def per_call_us(xs: torch.Tensor, w: torch.Tensor, b: torch.Tensor, calls: int = 30) -> float:
    for _ in range(3):
        many(xs, w, b)
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        many(xs, w, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("none", "torch", "autoprof"), required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pause", type=float, default=5.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    xs, w, b = _operands()
    before = per_call_us(xs, w, b)
    if args.mode == "torch":
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(5):
                many(xs, w, b)
        prof.export_chrome_trace(str(args.out / "torch_window.json"))
    elif args.mode == "autoprof":
        decorated = profile_fn(name="launch_cost", out_dir=str(args.out / "runs"))(many)
        for _ in range(8):  # 3 untraced warm-up calls, then wait 1, warmup 1, active 3
            decorated(xs, w, b)
    torch.cuda.synchronize()
    right_after = per_call_us(xs, w, b)
    time.sleep(args.pause)
    later = per_call_us(xs, w, b)
    result = {"mode": args.mode, "before_us": before, "right_after_us": right_after,
              "later_us": later, "right_after_ratio": right_after / before,
              "later_ratio": later / before, "torch": torch.__version__}
    (args.out / f"launch_cost_{args.mode}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
