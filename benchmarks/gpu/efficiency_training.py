"""Records training steps (forward + backward) for autoprof's MFU, with ground truth.

Run on a CUDA machine from the repository root::

    PYTHONPATH=. python benchmarks/gpu/efficiency_training.py --out OUT_DIR

Three bf16 steps, each forward and backward with every input requiring grad (so every
backward op computes both its input and its weight gradients, the count autoprof assumes):

- ``train_mlp``: four 4096x4096 ``nn.Linear`` layers with relu on 8192 tokens; model FLOPs
  per step = 3 x 2 x tokens x sum(in x out) (the forward product and its two gradients);
- ``train_conv``: three 3x3 convolutions (64-128-256 channels, batch 32, 56x56, stride 1,
  padding 1) with relu; 3 x the forward's 2 x N x Cout x H x W x Cin x 9;
- ``train_sdpa``: scaled dot-product attention (8 x 16 x 2048 x 128, not causal);
  forward 4 x B x H x L^2 x D, backward 2.5 x that (FlashAttention's count).

Each case runs under ``@autoprof(record_shapes=True, with_flops=True)`` (record_cases.py's
schedule: 3 untraced warm-up calls, wait 1, warmup 1, active 3), and untraced 20 times with
CUDA events. ``OUT_DIR/recorded.json`` holds per case its run folder, the model FLOPs per
step and the CUDA-event times; ``--size-scale 0.05`` tries the script on a CPU.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from record_cases import CUDA, DEVICE, SCHEDULE, TRUTH_CALLS, WARMUP_CALLS, _record, _time_calls

DTYPE = torch.bfloat16 if CUDA else torch.float32


def train_mlp(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    width, tokens = max(64, int(4096 * scale)), max(64, int(8192 * scale))
    layers = [torch.nn.Linear(width, width, device=DEVICE, dtype=DTYPE) for _ in range(4)]
    x = torch.randn(tokens, width, device=DEVICE, dtype=DTYPE, requires_grad=True)

    def step() -> None:
        y = x
        for layer in layers:
            y = torch.relu(layer(y))
        y.sum().backward()

    flops = 3 * 2 * tokens * width * width * len(layers)
    return step, {"flops": flops, "tokens": tokens, "width": width, "layers": len(layers)}


def train_conv(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    batch, hw = max(1, int(32 * scale)), 56
    chans = [(64, 128), (128, 256), (256, 256)]
    convs = [torch.nn.Conv2d(ci, co, 3, padding=1, device=DEVICE, dtype=DTYPE)
             for ci, co in chans]
    x = torch.randn(batch, 64, hw, hw, device=DEVICE, dtype=DTYPE, requires_grad=True)

    def step() -> None:
        y = x
        for conv in convs:
            y = torch.relu(conv(y))
        y.sum().backward()

    forward = sum(2 * batch * co * hw * hw * ci * 9 for ci, co in chans)
    return step, {"flops": 3 * forward, "batch": batch, "hw": hw, "convs": chans}


def train_sdpa(scale: float) -> tuple[Callable[[], Any], dict[str, Any]]:
    b, h, s, d = 8, 16, max(64, int(2048 * scale)), 128
    q, k, v = (torch.randn(b, h, s, d, device=DEVICE, dtype=DTYPE, requires_grad=True)
               for _ in range(3))

    def step() -> None:
        F.scaled_dot_product_attention(q, k, v).sum().backward()

    forward = 4 * b * h * s * s * d
    return step, {"flops": forward * 7 // 2, "shape": [b, h, s, d]}


CASES: dict[str, Callable[[float], tuple[Callable[[], Any], dict[str, Any]]]] = {
    "train_mlp": train_mlp, "train_conv": train_conv, "train_sdpa": train_sdpa,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--size-scale", type=float, default=1.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0) if CUDA else "cpu", "torch": torch.__version__,
        "dtype": str(DTYPE), "schedule": SCHEDULE, "warmup_calls": WARMUP_CALLS, "cases": {}}
    for case, build in CASES.items():
        t0 = time.perf_counter()
        try:
            fn, info = build(min(args.size_scale, 1.0))
            truth = _time_calls(fn, TRUTH_CALLS)
            recorded = _record(args.out, case, fn)
            if truth.get("event_us_median"):
                truth["tflops"] = info["flops"] / truth["event_us_median"] / 1e6
            results["cases"][case] = {**recorded, "info": info, "truth": truth,
                                      "wall_s": round(time.perf_counter() - t0, 2)}
        except Exception as exc:  # noqa: BLE001 - one failing case must not lose the others
            results["cases"][case] = {"error": f"{type(exc).__name__}: {exc}"}
        if CUDA:
            torch.cuda.empty_cache()
        print(case, json.dumps(results["cases"][case])[:300], flush=True)
        (args.out / "recorded.json").write_text(json.dumps(results, indent=2, default=str))
    return 0 if all("error" not in c for c in results["cases"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
