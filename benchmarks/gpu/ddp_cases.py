"""Two-rank DDP runs that pin attribution, the finisher and memory under NCCL.

Run on a machine with two GPUs, from the repository root, once per case::

    PYTHONPATH=. torchrun --standalone --nproc_per_node 2 benchmarks/gpu/ddp_cases.py \
        --case straggler --out OUT_DIR

Cases (every one: ``@autoprof(profile_memory=True)`` on the training step, 3 untraced warm-up
calls, then wait=1 warmup=1 active=3, all ranks' traces in one run folder):

- ``straggler``: rank 1 sleeps ``--delay-ms`` (5) per step inside ``autoprof.region("slow_input")``
  before its forward pass; rank 0 waits for it in DDP's gradient all-reduce;
- ``balanced``: the same job without the delay;
- ``overlap``: a deeper model with small DDP buckets (``bucket_cap_mb=4``) so gradient
  all-reduces run while the backward pass still computes;
- ``killed``: the balanced job, each rank SIGKILLs itself right after the call that ends the
  profiled window; the run folder must still end ``complete`` (its finisher is its own process).

Each rank writes ``OUT_DIR/<case>.rank<R>.json``: per call, its CUDA-event time and
``torch.cuda.max_memory_allocated()`` (peak stats reset before each call), and which calls were
profiled. Run folders land under ``OUT_DIR/runs/<case>/<run_id>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import autoprof
from autoprof import autoprof as profile_fn

WARMUP_CALLS = 3
SCHEDULE = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
CALLS = WARMUP_CALLS + 5
PROFILED_CALLS = [5, 6, 7]


def _model(case: str, device: torch.device) -> nn.Module:
    width, depth = (2048, 12) if case == "overlap" else (2048, 4)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers).to(device)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True,
                        choices=("straggler", "balanced", "overlap", "killed"))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= 2
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device(f"cuda:{rank}") if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    bucket_mb = 4 if args.case == "overlap" else 25
    model = DistributedDataParallel(_model(args.case, device),
                                    device_ids=[rank] if use_cuda else None,
                                    bucket_cap_mb=bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    data = torch.randn(4096, 2048, device=device)
    delay_s = args.delay_ms / 1000.0 if (args.case == "straggler" and rank == 1) else 0.0

    @profile_fn(name=f"ddp_{args.case}", out_dir=str(args.out / "runs"), warmup=WARMUP_CALLS,
                schedule=SCHEDULE, profile_memory=True)
    def train_step(batch: torch.Tensor) -> None:
        if delay_s:
            with autoprof.region("slow_input"):
                time.sleep(delay_s)  # the deliberate straggler: a slow host-side input step
        opt.zero_grad(set_to_none=True)
        loss = model(batch).square().mean()
        loss.backward()  # DDP all-reduces gradients here: fast ranks wait for the slow one
        opt.step()

    event_us: list[float | None] = []
    peaks: list[int | None] = []
    for call in range(CALLS):
        if use_cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
        train_step(data)
        if use_cuda:
            end.record()
            end.synchronize()
            event_us.append(start.elapsed_time(end) * 1e3)
            peaks.append(int(torch.cuda.max_memory_allocated()))
        else:
            event_us.append(None)
            peaks.append(None)
        if args.case == "killed" and call == PROFILED_CALLS[-1]:
            record = {"rank": rank, "killed_after_call": call, "pid": os.getpid()}
            (args.out / f"{args.case}.rank{rank}.json").write_text(json.dumps(record))
            os.kill(os.getpid(), signal.SIGKILL)
    autoprof.flush()
    record = {"rank": rank, "case": args.case, "delay_ms": delay_s * 1000.0,
              "bucket_cap_mb": bucket_mb, "event_us_per_call": event_us,
              "max_memory_allocated_per_call": peaks, "profiled_calls": PROFILED_CALLS,
              "warmup_calls": WARMUP_CALLS}
    (args.out / f"{args.case}.rank{rank}.json").write_text(json.dumps(record, indent=2))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
