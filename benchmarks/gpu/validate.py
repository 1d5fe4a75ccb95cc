"""Proves on a real GPU that what autoprof records and concludes is true.

Run on a CUDA machine from the repository root::

    PYTHONPATH=. python benchmarks/gpu/validate.py --out OUT_DIR

Writes ``OUT_DIR/results.json`` (every measured number and each check's pass/fail) and
``OUT_DIR/runs.tar.gz`` (the run folders autoprof wrote). Parts:

1. the seed experiment through ``examples/matmul_add.py`` at 64 and 4096, with and without
   warm-up, each in a fresh process;
2. accuracy: autoprof's GPU time per call of the 4096 bf16 matmul_add against CUDA events
   around the same calls with no profiler running; a size sweep comparing autoprof's verdict
   with where host launch time and GPU time cross (both measured without the profiler);
3. the same 64x64 work as 100 eager launches and as one CUDA graph replay.

The two-rank DDP straggler run is ``benchmarks/gpu/ddp_straggler.py`` (needs torchrun).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import torch

import autoprof
from autoprof import autoprof as profile_fn

SCHEDULE = {"wait": 1, "warmup": 1, "active": 5, "repeat": 1}
SWEEP_SIZES = (64, 128, 256, 512, 1024, 2048, 4096, 8192)


def _operands(size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(size, device="cuda", dtype=torch.bfloat16, generator=gen)
    return x, w, b


def matmul_add(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(x, w) + b


def _summary(run: Any) -> dict[str, Any]:
    s = run.summary()
    return {
        "path": str(run.path),
        "verdict": s["verdict"],
        "gpu_busy_pct": s["gpu_busy_pct"],
        "self_cpu_us": s["self_cpu_us"],
        "self_gpu_us": s["self_gpu_us"],
        "diagnostics": sorted({d["id"] for d in s["diagnostics"]}),
        "steps": s["steps"],
    }


def seed_runs(out_dir: Path) -> list[dict[str, Any]]:
    """The seed experiment, each case in a fresh process (cold start is per process)."""
    results = []
    for size in (64, 4096):
        for warm in (True, False):
            cmd = [sys.executable, "examples/matmul_add.py", "--size", str(size),
                   "--out-dir", str(out_dir), "--device", "cuda"]
            if not warm:
                cmd.append("--no-warmup")
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            runs = sorted((out_dir).glob("*/*/manifest.json"), key=lambda p: p.stat().st_mtime)
            run = autoprof.load(runs[-1].parent)
            entry = {"size": size, "warmup": warm, "returncode": proc.returncode,
                     "stdout_tail": proc.stdout[-600:], "stderr_tail": proc.stderr[-600:]}
            entry.update(_summary(run))
            entry["warmup_call_ms"] = (run.manifest or {}).get("warmup_call_ms")
            results.append(entry)
    return results


def _event_time_per_call_us(fn: Any, calls: int) -> float:
    """GPU time per call from CUDA events around ``calls`` back-to-back calls.

    The GPU is first held busy (``torch.cuda._sleep``) so that every call is queued before
    the first kernel starts: the events then time the kernels alone, not the host's launches.
    """
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(50_000_000)  # ~25 ms of GPU spin: longer than enqueuing `calls` calls
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def _host_launch_us(fn: Any, calls: int) -> float:
    """Host time to launch one call (no sync inside the loop; queue far from full)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter_ns()
    torch.cuda.synchronize()
    return (t1 - t0) / 1000.0 / calls


def accuracy(out_dir: Path) -> dict[str, Any]:
    x, w, b = _operands(4096)
    call = functools.partial(matmul_add, x, w, b)
    for _ in range(20):
        call()
    event_us = statistics.median(_event_time_per_call_us(call, 20) for _ in range(5))
    decorated = profile_fn(name="accuracy_4096", out_dir=str(out_dir), warmup=5,
                           schedule=SCHEDULE)(matmul_add)
    run = autoprof.check(decorated, x, w, b)
    steps = run.steps()
    active = steps[steps["gpu_work_us"] > 0]
    prof_us = float(active["gpu_work_us"].median())
    err_pct = abs(prof_us - event_us) / event_us * 100.0
    return {"cuda_event_us_per_call": event_us, "autoprof_gpu_work_us_per_call": prof_us,
            "error_pct": err_pct, "pass": err_pct <= 5.0, "run": str(run.path)}


def sweep(out_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for size in SWEEP_SIZES:
        operands = _operands(size)
        call = functools.partial(matmul_add, *operands)
        for _ in range(20):
            call()
        gpu_us = statistics.median(_event_time_per_call_us(call, 20) for _ in range(5))
        host_us = statistics.median(_host_launch_us(call, 20) for _ in range(5))
        decorated = profile_fn(name=f"sweep_n{size}", out_dir=str(out_dir), warmup=5,
                               schedule=SCHEDULE)(matmul_add)
        run = autoprof.check(decorated, *operands)
        verdict = run.verdict().kind
        ratio = gpu_us / host_us
        # Clear cases must match; near the crossover (0.5x-2x) any verdict but cpu-only is fair.
        if ratio < 0.5:
            expected = "overhead-bound"
        elif ratio > 2.0:
            expected = "compute-bound"
        else:
            expected = "either"
        ok = verdict != "cpu-only" if expected == "either" else verdict == expected
        rows.append({"size": size, "gpu_us_per_call": gpu_us, "host_launch_us_per_call": host_us,
                     "gpu_over_host": ratio, "expected": expected, "verdict": verdict,
                     "gpu_busy_pct": run.overhead().gpu_busy_pct, "pass": ok,
                     "run": str(run.path)})
        del operands, call
    return rows


def cuda_graph(out_dir: Path) -> dict[str, Any]:
    x, w, b = _operands(64)

    def eager_100() -> torch.Tensor:
        y = x
        for _ in range(100):
            y = matmul_add(x, w, b)
        return y

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            eager_100()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = eager_100()

    def graph_replay() -> torch.Tensor:
        graph.replay()
        return static_out

    eager_run = autoprof.check(
        profile_fn(name="eager_100", out_dir=str(out_dir), schedule=SCHEDULE)(eager_100))
    graph_run = autoprof.check(
        profile_fn(name="graph_replay", out_dir=str(out_dir), schedule=SCHEDULE)(graph_replay))
    eager, graphed = _summary(eager_run), _summary(graph_run)
    return {"eager": eager, "graph": graphed,
            "pass": eager["verdict"] == "overhead-bound" and graphed["verdict"] != "overhead-bound"}


def environment() -> dict[str, Any]:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True)
    return {"date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "nvidia_smi": smi.stdout.strip(),
            "python": sys.version.split()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=Path, default=Path("traces_gpu"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"environment": environment()}
    for part, fn in (("seed", seed_runs), ("accuracy", accuracy), ("sweep", sweep),
                     ("cuda_graph", cuda_graph)):
        t0 = time.perf_counter()
        try:
            results[part] = fn(args.runs)
        except Exception as exc:  # record and go on: one broken part must not hide the rest
            import traceback

            results[part] = {"error": f"{type(exc).__name__}: {exc}",
                             "traceback": traceback.format_exc()}
        results[f"{part}_seconds"] = time.perf_counter() - t0
        (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        print(part, json.dumps(results[part], default=str)[:2000], flush=True)
    with tarfile.open(args.out / "runs.tar.gz", "w:gz") as tar:
        tar.add(args.runs, arcname="runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
