"""Records the H200 runs that pin the what-if (autoprof.check(..., try_fixes=...)).

Run on a CUDA machine from the repository root (torch only; the analysis is not needed)::

    PYTHONPATH=. python benchmarks/gpu/whatif_cases.py --out OUT_DIR [--only PREFIX]

Cases (each an ``@autoprof``-decorated function checked with explicit fixes):

- ``seed64x100``: the seed (``x @ w + b``, bf16) at 64x64, 100 independent products per call
  (``xs[i] @ w + b`` for the 100 slices of one input: 200 small kernels): ``cuda-graph`` and
  ``compile-reduce-overhead`` should measure several times faster, and the profiled best fix
  should no longer be overhead-bound;
- ``seed4096``: the seed at 4096x4096, bf16: compute-bound, no fix should claim more than a
  few percent (``compile`` may fold the bias add into the GEMM's epilogue: up to ~10%);
- ``train_item``: an MLP training step that returns ``loss.item()``: ``cuda-graph`` is not
  applicable and names the ``.item()`` line.

Run folders land under ``OUT_DIR/runs/<case>/<run_id>/`` (each with ``whatif.json`` and, for
the best fix, the fixed function's own run under ``whatif/``); ``OUT_DIR/whatif_cases.json``
holds per case the run folder, the what-if results and ground truth measured here without
autoprof.record.whatif: the original's per-call CUDA-event time and, for the small seed, the same
function captured by hand in a CUDA graph.

``--tiny`` shrinks every case (8x8, 10 products, a 32-wide MLP) so the script runs on a CPU:
the CUDA-only fixes then report "not applicable" and wall time replaces CUDA events.
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
import torch.nn.functional as F

import autoprof
from autoprof import autoprof as profile_fn

SCHEDULE = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
TRUTH_CALLS = 30
ALL_FIXES = ("compile", "compile-reduce-overhead", "cuda-graph", "inference-mode", "bf16")


def per_call_us(fn: Callable[[], Any], device: str, calls: int = TRUTH_CALLS) -> float:
    """Median per-call time of ``fn()`` after 3 warm-up calls: CUDA events, else wall time."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(calls):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        else:
            began = time.perf_counter()
            fn()
            times.append((time.perf_counter() - began) * 1e6)
    return statistics.median(times)


def hand_graph_us(fn: Callable[[], Any]) -> float:
    """``fn`` captured in a CUDA graph the textbook way, replay time per call."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return per_call_us(graph.replay, "cuda")


def seed_many(n: int, repeat: int, device: str, dtype: torch.dtype) -> dict[str, Any]:
    xs = torch.randn(repeat, n, n, device=device, dtype=dtype)  # one input: one copy per call
    w = torch.randn(n, n, device=device, dtype=dtype) / n**0.5
    b = torch.randn(n, device=device, dtype=dtype)

    def matmul_add_many(xs: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> list:
        # independent products (nothing to fold away), each one the seed's matmul and add
        return [torch.matmul(xs[i], w) + b for i in range(xs.shape[0])]

    truth = {"original_us": per_call_us(lambda: matmul_add_many(xs, w, b), device),
             "kernels_per_call": 2 * repeat}
    if device == "cuda":
        truth["hand_cuda_graph_us"] = hand_graph_us(lambda: matmul_add_many(xs, w, b))
        truth["hand_cuda_graph_speedup"] = truth["original_us"] / truth["hand_cuda_graph_us"]
    return {"fn": matmul_add_many, "args": (xs, w, b), "fixes": ALL_FIXES, "truth": truth}


def seed_one(n: int, device: str, dtype: torch.dtype) -> dict[str, Any]:
    x = torch.randn(n, n, device=device, dtype=dtype)
    w = torch.randn(n, n, device=device, dtype=dtype) / n**0.5
    b = torch.randn(n, device=device, dtype=dtype)

    def matmul_add(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, w) + b

    truth = {"original_us": per_call_us(lambda: matmul_add(x, w, b), device),
             "addmm_us": per_call_us(lambda: torch.addmm(b, x, w), device),
             "gemm_flops": 2 * n**3}
    return {"fn": matmul_add, "args": (x, w, b), "fixes": ALL_FIXES, "truth": truth}


def train_item(width: int, batch: int, device: str) -> dict[str, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.randn(batch, width, device=device)
    target = torch.randint(0, 10, (batch,), device=device)

    def train_step(data: torch.Tensor, target: torch.Tensor) -> float:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        opt.step()
        return loss.item()  # the host waits for the GPU here: no CUDA graph can hold this

    truth = {"original_us": per_call_us(lambda: train_step(data, target), device)}
    return {"fn": train_step, "args": (data, target),
            "fixes": ("cuda-graph", "compile-reduce-overhead", "inference-mode"), "truth": truth}


def cases(tiny: bool, device: str) -> dict[str, Callable[[], dict[str, Any]]]:
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    return {
        "seed64x100": lambda: seed_many(8 if tiny else 64, 10 if tiny else 100, device, dtype),
        "seed4096": lambda: seed_one(64 if tiny else 4096, device, dtype),
        "train_item": lambda: train_item(32 if tiny else 4096, 8 if tiny else 256, device),
    }


def record(name: str, case: dict[str, Any], out: Path) -> dict[str, Any]:
    fn = profile_fn(name=name, out_dir=str(out / "runs"), warmup=3, schedule=SCHEDULE)(case["fn"])
    began = time.perf_counter()
    run = autoprof.check(fn, *case["args"], try_fixes=case["fixes"])
    run_dir = Path(getattr(run, "path", run))
    path = run_dir / "whatif.json"
    whatif = json.loads(path.read_text()) if path.is_file() else {"results": []}
    keep = ("fix", "applicable", "status", "reason", "baseline_us", "fixed_us", "speedup",
            "speedup_low", "speedup_high", "outputs_match", "max_abs_error", "setup_s",
            "fixed_run", "fixed_verdict")
    return {
        "run": str(run_dir.relative_to(out)),
        "check_s": time.perf_counter() - began,
        "truth": case["truth"],
        "results": [{k: r.get(k) for k in keep} for r in whatif["results"]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", default="", help="record only the cases with this prefix")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes, to try it on a CPU")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args.out.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__, "tiny": args.tiny, "cases": {}}
    for name, build in cases(args.tiny, device).items():
        if not name.startswith(args.only):
            continue
        try:
            recorded["cases"][name] = record(name, build(), args.out)
        except Exception as exc:  # one broken case must not cost the others
            recorded["cases"][name] = {"error": f"{type(exc).__name__}: {exc}", "results": []}
            print(f"{name}: FAILED {type(exc).__name__}: {exc}", flush=True)
        for r in recorded["cases"][name]["results"]:
            speed = f"{r['speedup']:.2f}x" if r["speedup"] else "-"
            print(f"{name:<12} {r['fix']:<24} {r['status']:<15} {speed:>8}  {r['reason'] or ''}",
                  flush=True)
        (args.out / "whatif_cases.json").write_text(json.dumps(recorded, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
