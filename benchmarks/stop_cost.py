"""Where the end of a torch.profiler run spends its time: stop versus export_chrome_trace.

    .venv/bin/python benchmarks/stop_cost.py [--steps 3000,30000]

Profiles N steps of the 64x64 matmul+add loop (CPU activity, record_shapes and with_flops as
in target 3), then times ``prof.stop()`` and ``prof.export_chrome_trace()`` separately. Since
torch 2.5 the stop does not build FunctionEvents (that is lazy); what it spends is torch's own
``_disable_profiler()``, Kineto finalizing the trace in C++ on the thread that started the
profiler. That cost sits in front of any export, hand-written or autoprof's, and is why
target 3's limit (blocked time at most 2x ``export_chrome_trace`` alone) is out of reach
through torch.profiler: see docs/performance.md. It also runs the export on a helper thread
and counts how far the main thread's Python gets meanwhile: the export holds the GIL, so
moving it off the owner thread would not give the program its time back.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time

import torch
import torch.profiler as tp


def _profiled(steps: int) -> tp.profile:
    """A stopped profiler over ``steps`` steps of the target's loop."""
    torch.manual_seed(0)
    x, w, b = torch.randn(64, 64), torch.randn(64, 64), torch.randn(64)
    prof = tp.profile(activities=[tp.ProfilerActivity.CPU], record_shapes=True, with_flops=True)
    prof.start()
    for _ in range(steps):
        with tp.record_function("step"):
            torch.matmul(x, w) + b
    return prof


def measure(steps: int) -> dict[str, float]:
    prof = _profiled(steps)
    t0 = time.perf_counter()
    prof.stop()
    stop_s = time.perf_counter() - t0
    assert prof.profiler is not None  # started and stopped above
    disable_s = prof.profiler._stats.profiler_disable_call_duration_us / 1e6
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "trace.json")
        t0 = time.perf_counter()
        prof.export_chrome_trace(path)
        export_s = time.perf_counter() - t0
        size_mb = os.path.getsize(path) / 1e6
    return {"steps": steps, "stop_s": stop_s, "disable_profiler_s": disable_s,
            "export_chrome_trace_s": export_s, "trace_mb": size_mb,
            "stop_over_export": stop_s / export_s,
            "main_thread_speed_during_background_export": _background_export_share(steps)}


def _background_export_share(steps: int) -> float:
    """How fast the main thread's Python runs while ``export_chrome_trace`` runs on another
    thread, as a share of its speed alone: near 1 if the export let go of the GIL, near 0
    if it holds it (then moving the export off the owner thread would not unblock users)."""
    prof = _profiled(steps)
    prof.stop()
    done = threading.Event()
    with tempfile.TemporaryDirectory() as out:
        def export() -> None:
            try:
                prof.export_chrome_trace(os.path.join(out, "trace.json"))
            finally:
                done.set()

        spins = 0
        t0 = time.perf_counter()
        threading.Thread(target=export).start()
        while not done.is_set():
            spins += 1
        elapsed_s = time.perf_counter() - t0
    alone = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < elapsed_s:
        alone += 1
    # the lone loop also reads the clock each turn: a slight bias toward a larger share
    return spins / max(alone, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="3000,30000")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for steps in (int(s) for s in args.steps.split(",")):
        print(json.dumps({k: round(v, 4) for k, v in measure(steps).items()}))


if __name__ == "__main__":
    main()
