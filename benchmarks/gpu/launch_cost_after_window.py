"""How much slower are a program's calls right after a profiling window, and whose is it?

Run from the repository root (CPU, or a CUDA machine with ``--device cuda``)::

    PYTHONPATH=. python benchmarks/gpu/launch_cost_after_window.py --device cpu --out OUT
    PYTHONPATH=. python benchmarks/gpu/launch_cost_after_window.py --device cuda --out OUT
    PYTHONPATH=. python benchmarks/gpu/launch_cost_after_window.py --mode autoprof --out OUT

Each trial is a fresh process. It times 30 calls of a host-bound step before any profiler
ran (their median is the steady call), then a profiling window, then the first 30 calls after
it, then 30 more after ``--pause`` seconds. Each call is timed on the host clock (the device
synchronized at both ends on CUDA, as autoprof times its warm-up calls), with the thread's
own CPU time and its involuntary context switches beside it: a call whose wall time is far
above its CPU time waited for a core (another process, or one of its own threads, ran).
Steps: on CUDA 100 independent 64x64 bf16 ``x @ w + b`` (200 small kernels a call); on CPU a
64x64 product and 40 small ops, with one intra-op thread per CPU (``--threads``).

Modes (the window): ``none`` (no profiler: the machine's own drift), ``torch`` (a
hand-written ``torch.profiler.profile`` with wait 1, warmup 1, active 3 and
``export_chrome_trace``), ``autoprof`` (``@autoprof``, its default schedule, as shipped),
``no-finisher`` (the same, with no finisher process: the finisher's share), ``nice10``
(the finisher only nices itself to 10, as before ``SCHED_IDLE``), ``gc-off`` (the shipped
run with the garbage collector off after the window: the collector's share), ``keep-cycle``
(autoprof as it was before it freed torch's profilers at the window's end: they sit in a
reference cycle until a full garbage collection, in some later call of the program),
``torch-teardown`` and ``autoprof-teardown`` (``torch`` and ``autoprof`` with
``TEARDOWN_CUPTI=1``: Kineto finalizes CUPTI as the window stops, so CUPTI's callbacks are
not left on every later launch).
Each trial also times a full collection (``gc.collect()``) before the window and one after
the calls after it (``gc_before_ms``, ``next_full_gc_ms``: what the program's next full
collection costs), the call that ends the window (``window_end_ms``) and the process's
resident memory after the calls after it, before and after that collection. ``--ops`` sets
the small ops of the CPU step (a larger trace: 2000).

With ``--mode`` one trial runs in this process and writes ``OUT/launch_cost_<mode>.json``;
without it every mode runs ``--trials`` times, interleaved, and
``OUT/after_window_<device>_t<threads>_ops<ops>.json`` holds each trial and, per mode, the
medians of: ``first_call_x`` (the first call
after the window / the steady call), ``first5_x`` (the first 5 calls' total / 5 steady
calls), ``first5_extra_ms``, ``first5_waiting_ms`` (their wall time less their CPU time, on
CPU), ``median30_x`` and ``later_x``; each mode's ``first5_x`` over ``none``'s is
``vs_none``. The autoprof modes also keep the manifest's ``after_window_call_ms`` (what
autoprof itself recorded for the same calls).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODES = ("none", "torch", "autoprof", "no-finisher", "nice10", "gc-off", "keep-cycle",
         "torch-teardown", "autoprof-teardown")
AUTOPROF_MODES = ("autoprof", "no-finisher", "nice10", "gc-off", "keep-cycle",
                  "autoprof-teardown")
TEARDOWN = "-teardown"  # the mode with Kineto told to finalize CUPTI at the window's end
CALLS = 30
FIRST = 5


def _step(device: str, threads: int, ops: int = 20
          ) -> tuple[Callable[[], Any], Callable[[], None]]:
    """The host-bound step and the device sync (a no-op on CPU)."""
    import torch

    if device == "cuda":
        xs = torch.randn(100, 64, 64, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(64, device="cuda", dtype=torch.bfloat16)
        return (lambda: [torch.matmul(xs[i], w) + b for i in range(xs.shape[0])],
                torch.cuda.synchronize)
    torch.set_num_threads(threads)
    a = torch.randn(64, 64)

    def cpu_step() -> Any:
        y = a @ a
        for _ in range(ops):
            y = y.add(1.0).mul(0.5)
        return y

    return cpu_step, lambda: None


def _series(fn: Callable[[], Any], sync: Callable[[], None], calls: int) -> list[list[float]]:
    """Per call: [wall ms, thread CPU ms, involuntary context switches]."""
    out = []
    for _ in range(calls):
        sync()
        switches = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
        wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
        fn()
        sync()
        wall, cpu = time.perf_counter_ns() - wall, time.thread_time_ns() - cpu
        out.append([round(wall / 1e6, 4), round(cpu / 1e6, 4),
                    resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw - switches])
    return out


def _torch_window(fn: Callable[[], Any], out: Path, device: str) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out / "torch.json"))) as p:
        for _ in range(5):
            fn()
            p.step()
    del p
    if device == "cuda":
        torch.cuda.synchronize()


def _autoprof_window(fn: Callable[[], Any], mode: str, out: Path) -> Any:
    from autoprof import autoprof
    from autoprof.record import export
    from autoprof.record.options import Schedule
    from autoprof.record.session import driver, writer

    if mode == "keep-cycle":
        driver.release = lambda prof: None  # type: ignore[assignment]
    elif mode == "no-finisher":
        def no_finisher(run: Any) -> Any:
            raise OSError("no finisher in this benchmark mode")

        writer.start_finisher = no_finisher
    elif mode == "nice10":
        export.yield_cpu = lambda pid: ""
    decorated = autoprof(name="after_window", out_dir=str(out / "runs"))(fn)
    for _ in range(3 + int(Schedule().total_steps or 0) - 1):  # warm-up calls, the schedule
        decorated()
    _window_end(decorated)  # the last active step: its call stops and exports
    if mode == "gc-off":
        gc.disable()
    return decorated


WINDOW_END: list[float] = []


def _window_end(fn: Callable[[], Any]) -> None:
    started = time.perf_counter_ns()
    fn()
    WINDOW_END.append(round((time.perf_counter_ns() - started) / 1e6, 3))


def _rss_mb() -> float | None:
    """This process's resident memory now (Linux), MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _full_gc_ms() -> float:
    started = time.perf_counter_ns()
    gc.collect()
    return round((time.perf_counter_ns() - started) / 1e6, 3)


def _ratios(before: list[list[float]], after: list[list[float]],
            later: list[list[float]]) -> dict[str, float]:
    steady = statistics.median(c[0] for c in before)
    first = after[:FIRST]
    return {
        "steady_ms": round(steady, 4),
        "first_call_x": round(after[0][0] / steady, 2),
        "first5_x": round(sum(c[0] for c in first) / (FIRST * steady), 2),
        "first5_extra_ms": round(sum(c[0] for c in first) - FIRST * steady, 3),
        "first5_waiting_ms": round(sum(c[0] - c[1] for c in first), 3),
        "first5_switches": sum(int(c[2]) for c in first),
        "median30_x": round(statistics.median(c[0] for c in after) / steady, 2),
        "later_x": round(statistics.median(c[0] for c in later) / steady, 2),
    }


def trial(mode: str, device: str, threads: int, pause_s: float, out: Path,
          ops: int = 20) -> dict[str, Any]:
    """One trial in this process (the worker)."""
    import torch

    fn, sync = _step(device, threads, ops)
    for _ in range(100):
        fn()
    before = _series(fn, sync, CALLS)
    gc_before_ms = _full_gc_ms()
    step = fn
    if mode.endswith(TEARDOWN):
        os.environ["TEARDOWN_CUPTI"] = "1"  # Kineto reads it as the window stops
    if mode in ("torch", "torch" + TEARDOWN):
        _torch_window(fn, out, device)
    elif mode in AUTOPROF_MODES:
        step = _autoprof_window(fn, mode, out)
    after = _series(step, sync, CALLS)
    time.sleep(pause_s)
    later = _series(step, sync, CALLS)
    rss_mb = _rss_mb()  # before any full collection after the window
    gc.enable()
    next_gc_ms = _full_gc_ms()
    result: dict[str, Any] = {"mode": mode, "device": device, "threads": torch.get_num_threads(),
                              "ops": ops, **_ratios(before, after, later),
                              "gc_before_ms": gc_before_ms, "next_full_gc_ms": next_gc_ms,
                              "gc_extra_ms": round(next_gc_ms - gc_before_ms, 3),
                              "window_end_ms": WINDOW_END[0] if WINDOW_END else None,
                              "rss_after_window_mb": rss_mb, "rss_after_gc_mb": _rss_mb(),
                              "torch": torch.__version__,
                              "before": before, "after": after, "later": later}
    if mode in AUTOPROF_MODES:
        result["manifest_after_window_call_ms"] = _recorded(out / "runs")
    return result


def _recorded(runs: Path) -> list[float] | None:
    """What autoprof recorded for the calls after the window (its finisher waited for)."""
    import autoprof

    autoprof.flush()
    for path in sorted(runs.glob("*/*/manifest.json")):
        return list(json.loads(path.read_text()).get("after_window_call_ms") or [])
    return None


def _summary(trials: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("first_call_x", "first5_x", "first5_extra_ms", "first5_waiting_ms", "median30_x",
            "later_x", "steady_ms", "gc_before_ms", "next_full_gc_ms", "gc_extra_ms",
            "window_end_ms", "rss_after_window_mb", "rss_after_gc_mb")
    medians: dict[str, dict[str, float]] = {}
    for mode in MODES:
        rows = [t for t in trials if t["mode"] == mode]
        if rows:
            medians[mode] = {k: round(statistics.median(r[k] for r in rows), 3) for k in keys
                             if all(r.get(k) is not None for r in rows)}
    none = medians.get("none", {}).get("first5_x") or 0.0
    for row in medians.values():
        row["vs_none"] = round(row["first5_x"] / none, 2) if none else None
    fixed, before = medians.get("autoprof"), medians.get("keep-cycle")
    if fixed and before:  # the fix, side by side: before / after
        medians["keep-cycle_over_autoprof"] = {
            k: round(before[k] / fixed[k], 2) if fixed.get(k) else None
            for k in ("next_full_gc_ms", "gc_extra_ms", "window_end_ms", "first5_x",
                      "rss_after_window_mb")}
    return medians


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Every mode ``--trials`` times, each a fresh process, interleaved."""
    trials = []
    load_start = os.getloadavg()[0]
    started = time.monotonic()
    for _ in range(args.trials):
        for mode in args.modes:
            with tempfile.TemporaryDirectory() as work:
                argv = [sys.executable, __file__, "--mode", mode, "--device", args.device,
                        "--threads", str(args.threads), "--pause", str(args.pause),
                        "--ops", str(args.ops), "--out", work, "--worker"]
                done = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                                      check=True)
                trials.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {"device": args.device, "cpus": os.cpu_count(), "threads": args.threads,
            "ops": args.ops,
            "load_avg_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
            "seconds": round(time.monotonic() - started, 1), "python": sys.version.split()[0],
            "medians": _summary(trials), "trials": trials}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=MODES, default=None)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.modes = [m for m in args.modes.split(",") if m in MODES]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.mode is not None:
        result = trial(args.mode, args.device, args.threads, args.pause, args.out, args.ops)
        if not args.worker:
            (args.out / f"launch_cost_{args.mode}.json").write_text(json.dumps(result, indent=1))
        print(json.dumps(result))
        return 0
    report = run_all(args)
    path = args.out / f"after_window_{args.device}_t{args.threads}_ops{args.ops}.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "trials"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
