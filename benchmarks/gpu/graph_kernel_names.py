"""Per kernel name, what a truth workload's variant runs an iteration, with the mechanisms a
whole-step CUDA graph brings taken apart: the optimizer made capturable, autocast's cast
cache turned off, neither captured.

    PYTHONPATH=.:/tmp/site python3 benchmarks/gpu/graph_kernel_names.py OUT.json \\
        gpt2_small:baseline gpt2_small:baseline:capturable gpt2_small:baseline:cacheoff \\
        gpt2_small:cuda_graph sync_mask_b4096:where sync_mask_b4096:where:capturable

Each argument is ``workload:variant[:capturable][:cacheoff]``: ``capturable`` builds every
``torch.optim.AdamW`` of the variant with ``capturable=True`` (and without ``fused``),
``cacheoff`` every ``torch.autocast`` with ``cache_enabled=False``. Per argument: the median
of 5 blocks of 20 iterations (ms an iteration, CUDA events, after 10 warm-up iterations),
then torch.profiler over 10 iterations: kernels (and memcpys, memsets) an iteration, their
GPU time, and both per kernel name (`graph_kernels.py`'s `iteration_ms` and
`gpu_work_by_name`). Writes OUT.json after each argument
(benchmarks/results-h200-graph-kernel-names.json; docs/gpu-validation.md, "What capture
takes").
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "truth"))

from common import Ctx, Variant  # noqa: E402
from graph_kernels import gpu_work_by_name, iteration_ms  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

_ADAMW = torch.optim.AdamW
_AUTOCAST = torch.autocast


class _CapturableAdamW(_ADAMW):
    def __init__(self, params: Any, **kw: Any) -> None:
        kw.pop("fused", None)
        super().__init__(params, **{**kw, "capturable": True})


class _UncachedAutocast(_AUTOCAST):
    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **{**kw, "cache_enabled": False})


@contextlib.contextmanager
def _patched(capturable: bool, cache_off: bool) -> Iterator[None]:
    """The variant built (and run) with AdamW capturable and/or autocast's cache off."""
    if capturable:
        torch.optim.AdamW = _CapturableAdamW  # type: ignore[misc]
    if cache_off:
        torch.autocast = _UncachedAutocast  # type: ignore[misc]
    try:
        yield
    finally:
        torch.optim.AdamW = _ADAMW  # type: ignore[misc]
        torch.autocast = _AUTOCAST  # type: ignore[misc]


def measure(variant: Variant) -> dict[str, Any]:
    """The variant's iteration time and its GPU work an iteration, in total and by name."""

    def step() -> object:
        return variant.call(next(variant.batches))

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    ms = iteration_ms(step)
    work = gpu_work_by_name(step)
    return {"iteration_ms": ms, "kernels": sum(n for n, _ in work.values()),
            "gpu_us": sum(us for _, us in work.values()),
            "by_name": {k: [n, round(us, 2)] for k, (n, us) in work.items()}}


def main() -> int:
    out_path, specs = Path(sys.argv[1]), sys.argv[2:]
    ctx = Ctx("cuda", False)
    out: dict[str, Any] = {}
    for spec in specs:
        workload, variant, *mods = spec.split(":")
        with _patched("capturable" in mods, "cacheoff" in mods):
            out[spec] = measure(WORKLOADS[workload].build(ctx)[variant]())
        print(spec, out[spec]["iteration_ms"], out[spec]["kernels"], out[spec]["gpu_us"],
              flush=True)
        out_path.write_text(json.dumps(out, indent=1))
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
