"""How many kernels a whole-step CUDA graph of a truth workload runs beside the step as
written, and both untraced iteration times (CUDA events): the graph a user captures runs the
optimizer with ``capturable=True`` (and, under autocast, casts without the cache, which on
the H200 added no kernel), so its kernels are not the traced step's (docs/gpu-validation.md,
"What capture takes").

    PYTHONPATH=.:/tmp/site python3 benchmarks/gpu/graph_kernels.py OUT gpt2_small sync_mask_b4096

Writes ``OUT/graph_kernels.json``: per ``workload/variant`` the median of 5 blocks of 20
iterations (ms an iteration, after 10 warm-up iterations) and the kernels an iteration
launches, counted by torch.profiler over 10 iterations.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "truth"))

from common import Ctx, Variant  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

VARIANTS = ("baseline", "where", "cuda_graph", "graph_without_sync")
Step = Callable[[], object]


def _one_iteration(variant: Variant) -> Step:
    return lambda: variant.call(next(variant.batches))


def iteration_ms(step: Step) -> float:
    """The median of 5 blocks of 20 calls of `step`, ms a call (CUDA events)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    blocks = []
    for _ in range(5):
        start.record()
        for _ in range(20):
            step()
        end.record()
        torch.cuda.synchronize()
        blocks.append(start.elapsed_time(end) / 20)
    return statistics.median(blocks)


def gpu_work_by_name(step: Step, iterations: int = 10) -> dict[str, tuple[float, float]]:
    """Per GPU item name (kernels, memcpys, memsets): (how many, GPU us) an iteration of
    `step`, counted by torch.profiler over `iterations`."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(iterations):
            step()
        torch.cuda.synchronize()
    count: Counter[str] = Counter()
    gpu_us: defaultdict[str, float] = defaultdict(float)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            count[ev.name] += 1
            gpu_us[ev.name] += ev.device_time
    return {k: (count[k] / iterations, gpu_us[k] / iterations) for k in sorted(count)}


def main() -> int:
    out, names = Path(sys.argv[1]), sys.argv[2:]
    ctx = Ctx("cuda", False)
    results: dict[str, dict[str, float]] = {}
    for workload in names:
        variants = WORKLOADS[workload].build(ctx)
        for name in (v for v in VARIANTS if v in variants):
            step = _one_iteration(variants[name]())
            for _ in range(10):
                step()
            torch.cuda.synchronize()
            ms = iteration_ms(step)
            work = gpu_work_by_name(step)
            results[f"{workload}/{name}"] = {
                "iteration_ms": ms, "kernels_per_iteration": sum(n for n, _ in work.values())}
            print(workload, name, results[f"{workload}/{name}"], flush=True)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "results": results}
    (out / "graph_kernels.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
