"""Does the end of a profiled window slow the program down, and is the GPU time right?

Run on a CUDA machine from the repository root::

    PYTHONPATH=. python benchmarks/gpu/offpath_cases.py --out OUT_DIR

The seed loop (``x @ w + b`` in bf16 at 4096) is decorated with ``@autoprof`` (3 untraced
warm-up calls, then wait=1 warmup=1 active=3). Right after the call that ends the profiled
window, the same loop runs for ``--seconds`` (3) in 100 ms buckets, each bucket timed with
CUDA events (time per call = elapsed / calls, one sync per bucket); then, after ``--pause``
(5) seconds, the same measurement again in the same process: that is the baseline. Repeated
``--repeats`` (3) times, one run folder each. ``OUT_DIR/offpath.json`` holds per repeat:

- ``after_buckets_us`` / ``later_buckets_us``: time per call in each bucket;
- ``ratio_median`` (median bucket after / median bucket later) and ``ratio_worst`` (worst
  bucket after / median later): the off-path target is within 5% (<= 1.05);
- ``profiled_event_us``: CUDA-event time of each profiled call (events around the decorated
  call) and ``truth``: the undecorated loop's CUDA-event time per call; compare the GPU time
  per call that autoprof reports for the run folder (``autoprof summary``) against these;
- ``rss_kb_before`` / ``rss_kb_after``: the process's VmRSS before the run's first call and
  after ``autoprof.flush()`` (the added RSS target is <= 10 MB, torch's profiler buffers
  included here, so this is an upper bound);
- ``finished_s``: how long ``autoprof.flush()`` waited for the finisher after the pause.

Run folders land under ``OUT_DIR/runs/``. ``--size 256 --dtype float32`` runs it on a CPU
(wall-clock timing instead of CUDA events) to try the script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import autoprof
from autoprof import autoprof as profile_fn

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
SCHEDULE = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
WARMUP_CALLS = 3
BUCKET_S = 0.1


def _sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def _rss_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def _buckets(fn: Callable[[], Any], seconds: float) -> list[float]:
    """Time per call (us) in consecutive buckets of about BUCKET_S wall time each."""
    out = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        calls = 0
        t0 = time.perf_counter()
        if CUDA:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        while time.perf_counter() - t0 < BUCKET_S:
            fn()
            calls += 1
        if CUDA:
            stop.record()
            stop.synchronize()
            out.append(start.elapsed_time(stop) * 1e3 / calls)
        else:
            out.append((time.perf_counter() - t0) * 1e6 / calls)
    return out


def _per_call_us(fn: Callable[[], Any], calls: int) -> list[float]:
    """CUDA-event (or wall) time of each call, events around the call, no sync between."""
    if not CUDA:
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
        return times
    pairs = []
    for _ in range(calls):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        pairs.append((start, stop))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) * 1e3 for a, b in pairs]


def one_repeat(index: int, size: int, dtype: torch.dtype, seconds: float, pause: float,
               runs: Path) -> dict[str, Any]:
    torch.manual_seed(index)
    x = torch.randn(size, size, device=DEVICE, dtype=dtype)
    w = torch.randn(size, size, device=DEVICE, dtype=dtype)
    b = torch.randn(size, device=DEVICE, dtype=dtype)

    def bare() -> torch.Tensor:
        return x @ w + b

    for _ in range(20):
        bare()
    _sync()
    truth = _per_call_us(bare, 50)
    rss_before = _rss_kb()
    step = profile_fn(name=f"seed{size}_r{index}", warmup=WARMUP_CALLS, schedule=SCHEDULE,
                      out_dir=str(runs))(bare)
    window_calls = WARMUP_CALLS + SCHEDULE["wait"] + SCHEDULE["warmup"] + SCHEDULE["active"]
    before = _per_call_us(lambda: step(), window_calls - 1)  # up to the window's last call
    t_end = time.perf_counter()
    step()  # ends the window: torch's stop and the raw export happen in this call
    window_end_s = time.perf_counter() - t_end
    after = _buckets(bare, seconds)
    time.sleep(pause)
    later = _buckets(bare, seconds)
    t0 = time.perf_counter()
    autoprof.flush()
    finished_s = time.perf_counter() - t0
    rss_after = _rss_kb()
    later_median = statistics.median(later)
    profiled = before[WARMUP_CALLS + SCHEDULE["wait"] + SCHEDULE["warmup"]:]
    return {
        "run_dir": str(step.autoprof_session.run_dir),
        "after_buckets_us": after,
        "later_buckets_us": later,
        "ratio_median": statistics.median(after) / later_median,
        "ratio_worst": max(after) / later_median,
        "ratio_first_bucket": after[0] / later_median,
        "last_window_call_s": window_end_s,
        "profiled_event_us": profiled,  # the recorded active steps except the last one
        "truth": {"event_us_median": statistics.median(truth), "event_us_min": min(truth)},
        "rss_kb_before": rss_before,
        "rss_kb_after": rss_after,
        "finished_s": finished_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--pause", type=float, default=5.0)
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    runs = args.out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if CUDA else "cpu",
        "torch": torch.__version__, "size": args.size, "dtype": args.dtype,
        "cpu_count": os.cpu_count(), "timing": "cuda events" if CUDA else "wall clock",
        "repeats": [],
    }
    for i in range(args.repeats):
        result["repeats"].append(one_repeat(i, args.size, dtype, args.seconds, args.pause, runs))
        rep = result["repeats"][-1]
        print(f"repeat {i}: after/later median {rep['ratio_median']:.3f}, worst bucket "
              f"{rep['ratio_worst']:.3f}, finisher waited {rep['finished_s']:.2f} s", flush=True)
    reps = result["repeats"]
    result["ratio_median_of_repeats"] = statistics.median(r["ratio_median"] for r in reps)
    result["ratio_worst_of_repeats"] = max(r["ratio_worst"] for r in reps)
    (args.out / "offpath.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "repeats"}, indent=2))


if __name__ == "__main__":
    main()
