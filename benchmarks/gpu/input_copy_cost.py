"""What a CUDA graph's input copy costs the GPU, measured without a profiler: the device-to-
device copy a graphed call makes (`static.copy_(x, non_blocking=True)`) before each replay,
whose bandwidth the replay's `cuda-graph` prediction uses
(`autoprof/analysis/metrics/replay/changes.py`, `COPY_BANDWIDTH_SHARE`).

Run on a CUDA machine from the repository root::

    python benchmarks/gpu/input_copy_cost.py --out OUT

For bf16 tensors of 64 KiB to 256 MiB: ``--iters`` copies back to back into one static
buffer (from ``--sources`` different tensors in turn, so the source is not the copy before
it), timed with CUDA events, ``--rounds`` times interleaved over the sizes. Per size:
the median GPU time per copy in microseconds, and its bandwidth counting the bytes read and
written (2 x size / time) as a share of the device's datasheet bandwidth.
``OUT/input_copy_cost.json`` holds every round.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import torch

SIZES_MIB = (0.0625, 0.25, 1, 4, 8, 16, 32, 64, 128, 256)


def _copy_us(static: torch.Tensor, sources: list[torch.Tensor], iters: int) -> float:
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for i in range(iters):
        static.copy_(sources[i % len(sources)], non_blocking=True)
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) * 1e3 / iters


def measure(iters: int, rounds: int, n_sources: int) -> dict[str, Any]:
    buffers = {}
    for mib in SIZES_MIB:
        n = int(mib * 2**20) // 2
        buffers[mib] = (torch.empty(n, device="cuda", dtype=torch.bfloat16),
                        [torch.randn(n, device="cuda").to(torch.bfloat16)
                         for _ in range(n_sources)])
    for static, sources in buffers.values():  # warm up
        _copy_us(static, sources, 10)
    runs: dict[float, list[float]] = {mib: [] for mib in SIZES_MIB}
    for _ in range(rounds):
        for mib, (static, sources) in buffers.items():
            runs[mib].append(_copy_us(static, sources, iters))
    return {str(mib): runs[mib] for mib in SIZES_MIB}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sources", type=int, default=3)
    args = parser.parse_args()
    from autoprof.analysis.metrics.peaks import peak_for

    name = torch.cuda.get_device_name()
    peak_gbps = peak_for(name).gbps
    rounds = measure(args.iters, args.rounds, args.sources)
    sizes = []
    for mib, times in rounds.items():
        us = statistics.median(times)
        gbps = 2 * float(mib) * 2**20 / (us * 1e-6) / 1e9
        sizes.append({"mib": float(mib), "median_us": us, "min_us": min(times),
                      "max_us": max(times), "gbps_read_and_written": gbps,
                      "share_of_peak": gbps / peak_gbps if peak_gbps else None})
    out = {"device": name, "torch": torch.__version__, "peak_gbps": peak_gbps,
           "iters": args.iters, "rounds_n": args.rounds, "sizes": sizes, "rounds_us": rounds}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "input_copy_cost.json").write_text(json.dumps(out, indent=1))
    for row in sizes:
        print(f"{row['mib']:>9g} MiB  {row['median_us']:9.2f} us  "
              f"{row['gbps_read_and_written']:7.0f} GB/s  {row['share_of_peak'] or 0:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
