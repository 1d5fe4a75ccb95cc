"""Regions in a small training loop: one decorated step, labelled phases inside it.

    python examples/train_regions.py --steps 20

``train_step`` is profiled (3 untraced warm-up steps, then wait=1, warmup=1, active=3); the
``forward``, ``loss``, ``backward`` and ``optimizer`` regions inside it only add their labels
to its trace, so the trace shows where each step's time goes. After the schedule, every call
is a plain pass-through and the loop runs at full speed.
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch import nn

from autoprof import autoprof


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--out-dir", default=None,
                        help="traces root (default: $AUTOPROF_DIR or ./traces)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(args.width, args.width), nn.ReLU(), nn.Linear(args.width, 10)
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    inputs = torch.randn(args.batch, args.width, device=device)
    targets = torch.randint(0, 10, (args.batch,), device=device)

    @autoprof(name="train_step", out_dir=args.out_dir)
    def train_step(x: torch.Tensor, y: torch.Tensor) -> float:
        with autoprof.region("forward"):
            logits = model(x)
        with autoprof.region("loss"):
            loss = loss_fn(logits, y)
        with autoprof.region("backward"):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        with autoprof.region("optimizer"):
            optimizer.step()
        return float(loss.detach())

    losses = [train_step(inputs, targets) for _ in range(args.steps)]
    autoprof.flush()  # finish the run (partial if --steps was too short for the schedule)
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} over {len(losses)} steps")
    session = getattr(train_step, "autoprof_session", None)  # None under AUTOPROF=0
    if session is None:
        print("autoprof is off (AUTOPROF=0): no run written")
        return 0
    print(f"run folder: {session.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
