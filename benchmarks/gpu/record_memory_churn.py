"""Records the GPU runs that pin the allocator-churn check, with the allocator's own counts.

Run on a CUDA machine from the repository root (torch and this repository only)::

    PYTHONPATH=. python3 benchmarks/gpu/record_memory_churn.py --out OUT_DIR

Three cases, each one function under ``@autoprof(profile_memory=True, record_shapes=True)``
called ``CALLS`` times (3 untraced warm-up calls, then wait=1 warmup=1 active=3: calls 5, 6
and 7, counting from 0, are profiled), like ``record_cases.py``:

- ``mem_churn``: ``CHURN_OPS`` small elementwise ops per call, each allocating a fresh 4 KiB
  result and freeing the previous one: allocator-churn must fire (allocations per step).
- ``mem_fragmented``: before the calls, 40 blocks of 200 MiB are allocated and freed again
  (the caching allocator keeps them); each call then needs one 300 MiB block, which none of
  the cached ones can hold: reserved far above allocated, allocator-churn must fire.
- ``mem_compact``: the same call after ``torch.cuda.empty_cache()``: it must not fire.

Run folders land under ``OUT_DIR/runs/<case>/<run_id>/``; ``OUT_DIR/recorded_memory.json``
holds per case its run folder and, for every decorated call, from ``torch.cuda.memory_stats``
(peak stats reset before each call): ``max_memory_allocated``, ``memory_reserved`` after the
call and the number of allocations the call made (``allocation.all.allocated`` before/after).
On a CPU the script still records the runs (the CUDA numbers are null), to try it out.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import autoprof
from autoprof import autoprof as profile_fn

SCHEDULE = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
WARMUP_CALLS = 3
CALLS = WARMUP_CALLS + 1 + 1 + 3
PROFILED_CALLS = [5, 6, 7]
CHURN_OPS = 6000  # above the check's 5,000 allocations per step
MIB = 1024**2

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


def _stats() -> dict[str, int | None]:
    if not CUDA:
        return {"allocations": None, "reserved": None, "peak_allocated": None}
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    return {"allocations": int(stats.get("allocation.all.allocated", 0)),
            "reserved": int(torch.cuda.memory_reserved()),
            "peak_allocated": int(torch.cuda.max_memory_allocated())}


def _record(out: Path, case: str, fn: Callable[[], Any]) -> dict[str, Any]:
    decorated = profile_fn(name=case, warmup=WARMUP_CALLS, schedule=SCHEDULE,
                           out_dir=str(out / "runs"), record_shapes=True, with_flops=False,
                           profile_memory=True)(fn)
    calls = []
    for _ in range(CALLS):
        if CUDA:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        before = _stats()
        decorated()
        after = _stats()
        made = (after["allocations"] - before["allocations"]
                if after["allocations"] is not None and before["allocations"] is not None
                else None)
        calls.append({"max_memory_allocated": after["peak_allocated"],
                      "memory_reserved": after["reserved"], "allocations": made})
    autoprof.flush()
    folders = sorted((out / "runs" / case).glob("*/manifest.json"))
    run_dir = folders[-1].parent if folders else None
    status = json.loads(folders[-1].read_text()).get("status") if folders else None
    return {"run": str(run_dir.relative_to(out)) if run_dir else None, "status": status,
            "profiled_calls": PROFILED_CALLS, "calls": calls}


def churn() -> Callable[[], Any]:
    x = torch.ones(1024, device=DEVICE)

    def step() -> torch.Tensor:
        acc = x
        for _ in range(CHURN_OPS):
            acc = acc * 1.0001
        return acc

    return step


def fragmented(release_cache: bool) -> Callable[[], Any]:
    if CUDA:
        blocks = [torch.empty(200 * MIB, dtype=torch.uint8, device=DEVICE) for _ in range(40)]
        del blocks  # cached by the allocator, not returned to the driver
        if release_cache:
            torch.cuda.empty_cache()

    def step() -> int:
        big = torch.empty(300 * MIB, dtype=torch.uint8, device=DEVICE)
        big.fill_(1)
        return int(big.numel())

    return step


CASES: dict[str, Callable[[], Callable[[], Any]]] = {
    "mem_churn": churn,
    "mem_fragmented": lambda: fragmented(release_cache=False),
    "mem_compact": lambda: fragmented(release_cache=True),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(0) if CUDA else "cpu",
                               "torch": torch.__version__, "schedule": SCHEDULE,
                               "warmup_calls": WARMUP_CALLS, "calls": CALLS,
                               "churn_ops": CHURN_OPS, "cases": {}}
    for case, build in CASES.items():
        t0 = time.perf_counter()
        try:
            results["cases"][case] = {**_record(args.out, case, build()),
                                      "wall_s": round(time.perf_counter() - t0, 2)}
        except Exception as exc:  # noqa: BLE001 - one failing case must not lose the others
            results["cases"][case] = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            if CUDA:
                torch.cuda.empty_cache()
        print(case, json.dumps(results["cases"][case])[:300], flush=True)
        (args.out / "recorded_memory.json").write_text(json.dumps(results, indent=2))
    return 0 if all("error" not in c for c in results["cases"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
