"""Records the H200 runs that pin attribution, efficiency and memory, with ground truth.

Run on a CUDA machine from the repository root::

    PYTHONPATH=. python benchmarks/gpu/record_cases.py --out OUT_DIR [--only PREFIX]

Every case is one function decorated with ``@autoprof`` and called ``CALLS`` times (3 untraced
warm-up calls, then wait=1 warmup=1 active=3), so calls 5, 6 and 7 (0-based) are the profiled
ones. Run folders land under ``OUT_DIR/runs/<case>/<run_id>/``; ``OUT_DIR/recorded.json`` holds,
per case, its run folder and what was measured around it without the profiler:

- every case: per-call host wall time and CUDA-event time of the same function, undecorated,
  over ``TRUTH_CALLS`` calls after warm-up (medians);
- efficiency cases: the FLOPs and bytes the case does per call (from its shapes);
- memory cases: ``torch.cuda.max_memory_allocated()`` of every decorated call (peak stats
  reset before each), the device's capacity, and which calls were profiled.

``--size-scale`` shrinks every problem (e.g. 0.05) so the script can be tried on a CPU: CUDA
timing is then skipped and wall time is reported instead.
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
WARMUP_CALLS = 3
CALLS = WARMUP_CALLS + 1 + 1 + 3
PROFILED_CALLS = [5, 6, 7]
TRUTH_CALLS = 20

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


def _sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def _time_calls(fn: Callable[[], Any], calls: int) -> dict[str, float]:
    """Median host wall time and (on CUDA) CUDA-event time per call, after 3 warm-up calls."""
    for _ in range(3):
        fn()
    _sync()
    host_us, event_us = [], []
    for _ in range(calls):
        if CUDA:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            fn()
            end.record()
            host_us.append((time.perf_counter() - t0) * 1e6)
            end.synchronize()
            event_us.append(start.elapsed_time(end) * 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            host_us.append((time.perf_counter() - t0) * 1e6)
    return {"host_us_median": statistics.median(host_us),
            "event_us_median": statistics.median(event_us) if event_us else None,
            "event_us_min": min(event_us) if event_us else None}


def _record(out: Path, case: str, fn: Callable[[], Any], *, memory: bool = False,
            shapes: bool = True) -> dict[str, Any]:
    """Call ``fn`` CALLS times under @autoprof; return its run folder and per-call peaks."""
    decorated = profile_fn(name=case, warmup=WARMUP_CALLS, schedule=SCHEDULE,
                           out_dir=str(out / "runs"), record_shapes=shapes, with_flops=shapes,
                           profile_memory=memory)(fn)
    peaks: list[int | None] = []
    for _ in range(CALLS):
        if CUDA:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        decorated()
        if CUDA:
            torch.cuda.synchronize()
            peaks.append(int(torch.cuda.max_memory_allocated()))
        else:
            peaks.append(None)
    autoprof.flush()
    folders = sorted((out / "runs" / case).glob("*/manifest.json"))
    run_dir = folders[-1].parent if folders else None
    status = json.loads(folders[-1].read_text()).get("status") if folders else None
    return {"run": str(run_dir.relative_to(out)) if run_dir else None, "status": status,
            "max_memory_allocated_per_call": peaks, "profiled_calls": PROFILED_CALLS}


# --- attribution ------------------------------------------------------------------------------

def seed(n: int) -> tuple[Callable[[], Any], dict[str, Any]]:
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16, generator=gen)
    w = torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16, generator=gen)
    b = torch.randn(n, device=DEVICE, dtype=torch.bfloat16, generator=gen)

    def matmul_add() -> torch.Tensor:
        return torch.matmul(x, w) + b

    return matmul_add, {"flops": 2 * n**3 + n * n, "size": n}


def _mlp(width: int, depth: int) -> torch.nn.Module:
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(DEVICE)


def item_step(scale: float, width: int = 1024, batch: int = 256
              ) -> tuple[Callable[[], Any], dict[str, Any]]:
    """A training step that logs every parameter's gradient norm with .item() (a host sync each).

    At width 1024 and batch 256 the backward pass is itself host-bound; at 2048 x 4096 the GPU
    is busy while the host launches, and the syncs are what leaves it idle.
    """
    width = max(16, int(width * scale))
    model = _mlp(width, 8)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(max(8, int(batch * scale)), width, device=DEVICE)
    norms: list[float] = []

    def train_step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        with autoprof.region("log_grad_norms"):
            for p in model.parameters():
                norms.append(p.grad.norm().item())
        return float(len(norms))

    return train_step, {"parameters": len(list(model.parameters())), "width": width,
                        "batch": x.shape[0]}


class _SlowDataset(torch.utils.data.Dataset):
    """Each sample costs real CPU work (a small numpy-free Python loop), like decoding."""

    def __init__(self, width: int, work: int) -> None:
        self.width, self.work = width, work

    def __len__(self) -> int:
        return 1 << 20

    def __getitem__(self, index: int) -> torch.Tensor:
        acc = 0
        for i in range(self.work):
            acc += (i * index) % 7
        return torch.full((self.width,), float(acc % 3))


def dataloader_step(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    """A training step that pulls its batch from a single-process DataLoader doing CPU work."""
    width = max(16, int(512 * scale))
    loader = torch.utils.data.DataLoader(_SlowDataset(width, 2000), batch_size=32, num_workers=0)
    batches = iter(loader)
    model = _mlp(width, 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def train_step() -> float:
        batch = next(batches).to(DEVICE, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = model(batch).square().mean()
        loss.backward()
        opt.step()
        return 0.0

    return train_step, {"batch_size": 32, "width": width, "work_per_sample": 2000}


# --- efficiency -------------------------------------------------------------------------------

def gemm(dtype: str, n: int) -> tuple[Callable[[], Any], dict[str, Any]]:
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
                   "fp32": torch.float32}[dtype]
    a = torch.randn(n, n, device=DEVICE, dtype=torch_dtype)
    b = torch.randn(n, n, device=DEVICE, dtype=torch_dtype)
    tf32 = dtype == "tf32"

    def mm() -> torch.Tensor:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            return torch.mm(a, b)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False

    size = a.element_size()
    return mm, {"flops": 2 * n**3, "bytes": 3 * n * n * size, "dtype": dtype, "n": n}


def elementwise(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    """Three bandwidth-bound kernels on a 1 GiB fp32 tensor: mul, add, relu."""
    numel = max(1024, int((1 << 28) * scale))
    x = torch.randn(numel, device=DEVICE)

    def chain() -> torch.Tensor:
        return torch.relu(x * 2.0 + 1.0)

    per_op = 2 * numel * 4  # read one fp32 tensor, write one
    return chain, {"bytes": 3 * per_op, "kernels": 3, "numel": numel, "flops": 3 * numel}


def conv_net(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    """Inference through three 3x3 convolutions (bf16, channels 64-128-256) on a batch."""
    batch = max(1, int(64 * scale))
    hw = 112
    chans = [(3, 64), (64, 128), (128, 256)]
    convs = [torch.nn.Conv2d(ci, co, 3, padding=1).to(DEVICE, torch.bfloat16) for ci, co in chans]
    x = torch.randn(batch, 3, hw, hw, device=DEVICE, dtype=torch.bfloat16)
    flops = sum(2 * ci * co * 9 * hw * hw * batch for ci, co in chans)

    @torch.no_grad()
    def forward() -> torch.Tensor:
        y = x
        for conv in convs:
            y = torch.relu(conv(y))
        return y

    return forward, {"flops": flops, "batch": batch, "hw": hw, "convs": chans}


def sdpa(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    """Scaled dot-product attention forward, bf16, not causal."""
    b, h, s, d = 8, 16, max(64, int(2048 * scale)), 128
    q, k, v = (torch.randn(b, h, s, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3))

    @torch.no_grad()
    def attention() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)

    return attention, {"flops": 4 * b * h * s * s * d, "shape": [b, h, s, d]}


# --- memory -----------------------------------------------------------------------------------

def activations_step(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    """A training step whose activations dominate: batch 8192 through 8 layers of 2048."""
    width, batch = max(16, int(2048 * scale)), max(8, int(8192 * scale))
    model = _mlp(width, 8)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device=DEVICE)

    def train_step() -> None:
        opt.zero_grad(set_to_none=True)
        with autoprof.region("forward"):
            loss = model(x).square().mean()
        with autoprof.region("backward"):
            loss.backward()
        with autoprof.region("optimizer"):
            opt.step()

    return train_step, {"width": width, "batch": batch,
                        "activation_bytes_per_layer": batch * width * 4}


def leak_step(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    """Appends a 64 MiB result to a list every call: live memory grows each step."""
    numel = max(1024, int((16 << 20) * scale))
    x = torch.randn(numel, device=DEVICE)
    kept: list[torch.Tensor] = []

    def step() -> int:
        with autoprof.region("keep_history"):
            kept.append(x * 2.0)
        return len(kept)

    return step, {"leak_bytes_per_call": numel * 4}


def near_capacity(scale: float) -> tuple[Callable[[], Any], dict[str, Any], Callable[[], None]]:
    """Holds a buffer of 92% of the device, then steps with a little work on top."""
    if CUDA:
        total = torch.cuda.get_device_properties(0).total_memory
        hold = torch.empty(int(total * 0.92) // 4, device=DEVICE, dtype=torch.float32)
    else:
        total = 0
        hold = torch.empty(1024)
    x = torch.randn(max(1024, int((8 << 20) * scale)), device=DEVICE)

    def step() -> torch.Tensor:
        return (x * 2.0).sum()

    def release() -> None:
        nonlocal hold
        del hold
        if CUDA:
            torch.cuda.empty_cache()

    return step, {"capacity_bytes": total, "held_bytes": hold.numel() * 4}, release


# --- driver -----------------------------------------------------------------------------------

def cases(scale: float) -> dict[str, Callable[[], Any]]:
    small = min(scale, 1.0)
    return {
        "seed_n64": lambda: seed(64),
        "seed_n4096": lambda: seed(max(64, int(4096 * small))),
        "attr_item_step": lambda: item_step(small),
        "attr_item_gpu_step": lambda: item_step(small, width=2048, batch=4096),
        "attr_dataloader": lambda: dataloader_step(small),
        **{f"eff_gemm_{d}_{n}": (lambda d=d, n=n: gemm(d, max(64, int(n * small))))
           for d in ("bf16", "fp16", "tf32", "fp32") for n in (2048, 8192)},
        "eff_elementwise": lambda: elementwise(small),
        "eff_conv": lambda: conv_net(small),
        "eff_sdpa": lambda: sdpa(small),
        "mem_activations": lambda: activations_step(small),
        "mem_leak": lambda: leak_step(small),
        "mem_near_capacity": lambda: near_capacity(small),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", default="", help="record only the cases with this prefix")
    parser.add_argument("--size-scale", type=float, default=1.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(0) if CUDA else "cpu",
                               "torch": torch.__version__, "schedule": SCHEDULE,
                               "warmup_calls": WARMUP_CALLS, "calls": CALLS, "cases": {}}
    for case, build in cases(args.size_scale).items():
        if not case.startswith(args.only):
            continue
        t0 = time.perf_counter()
        built = build()
        fn, info = built[0], built[1]
        release = built[2] if len(built) > 2 else None
        try:
            # record first: a region entered outside a recording session would start a
            # session of its own, so the untimed truth runs after the recording has ended
            recorded = _record(args.out, case, fn, memory=case.startswith("mem_"),
                               shapes=not case.startswith("attr_"))
            truth = _time_calls(fn, TRUTH_CALLS) if not case.startswith("mem_leak") else {}
            event_us = truth.get("event_us_median")
            if event_us and info.get("flops"):
                truth["tflops"] = info["flops"] / event_us / 1e6
            if event_us and info.get("bytes"):
                truth["gbps"] = info["bytes"] / event_us / 1e3
            results["cases"][case] = {**recorded, "info": info, "truth": truth,
                                      "wall_s": round(time.perf_counter() - t0, 2)}
        except Exception as exc:  # noqa: BLE001 - one failing case must not lose the others
            results["cases"][case] = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            if release is not None:
                release()
            del built, fn
            if CUDA:
                torch.cuda.empty_cache()
        print(case, json.dumps(results["cases"][case])[:300], flush=True)
        (args.out / "recorded.json").write_text(json.dumps(results, indent=2, default=str))
    return 0 if all("error" not in c for c in results["cases"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
