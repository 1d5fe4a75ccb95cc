"""Two ranks, one of them slow on purpose: autoprof must name it the straggler.

Run on a machine with two GPUs (NCCL) or on CPU (gloo), from the repository root::

    PYTHONPATH=. torchrun --standalone --nproc_per_node 2 benchmarks/gpu/ddp_straggler.py \
        --out-dir traces_gpu --slow-rank 1 --delay-ms 30

Every rank decorates its training step with ``@autoprof``; all ranks' traces land in one run
folder. Rank 0 prints that folder's path on the last line (``RUN <path>``).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from autoprof import autoprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out-dir", default="traces")
    parser.add_argument("--slow-rank", type=int, default=1)
    parser.add_argument("--delay-ms", type=float, default=30.0)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= 2
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device(f"cuda:{rank}") if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).to(device),
        device_ids=[rank] if use_cuda else None,
    )
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.randn(256, 1024, device=device)

    @autoprof(name="ddp_step", out_dir=args.out_dir, warmup=2,
              schedule=dict(wait=1, warmup=1, active=3, repeat=1))
    def train_step(batch: torch.Tensor) -> float:
        if rank == args.slow_rank:
            time.sleep(args.delay_ms / 1000.0)  # the deliberate straggler: host-side delay
        opt.zero_grad(set_to_none=True)
        loss = model(batch).square().mean()
        loss.backward()  # DDP all-reduces gradients here: fast ranks wait for the slow one
        opt.step()
        return float(loss.detach())

    for _ in range(args.steps):
        train_step(data)
    dist.barrier()
    if rank == 0:
        root = os.path.join(args.out_dir, "ddp_step")
        newest = sorted(os.listdir(root))[-1]
        print("RUN", os.path.join(root, newest), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
