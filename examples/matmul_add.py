"""The seed experiment: how long does ``torch.matmul(x, w) + b`` really take?

Warms the operation up (untraced), then profiles it under torch.profiler's schedule
(wait=1, warmup=1, active=3) and writes a run folder under ``traces/`` (or ``--out-dir``):

    python examples/matmul_add.py --size 64
    python examples/matmul_add.py --size 4096 --device cuda --dtype bf16

At 64x64 on a GPU the host's launch cost dominates (overhead-bound); at 4096 the GPU's
arithmetic does (compute-bound). Prints the run folder and, when the analysis can load it,
autoprof's one-line verdict.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from autoprof import autoprof

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "float32": torch.float32}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="n of the n x n matrices")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default=None,
                        help="default: bf16 on CUDA, float32 on CPU")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--no-warmup", action="store_true",
                        help="profile from the first call (shows the cold start)")
    parser.add_argument("--out-dir", default=None,
                        help="traces root (default: $AUTOPROF_DIR or ./traces)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = DTYPES[args.dtype or ("bf16" if device == "cuda" else "float32")]

    warmup_calls = 0 if args.no_warmup else 3
    schedule = autoprof.Schedule(wait=1, warmup=1, active=3, repeat=1)

    @autoprof(name="matmul_add", warmup_calls=warmup_calls, schedule=schedule,
              out_dir=args.out_dir)
    def matmul_add(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, w) + b

    n = args.size
    x, w, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(3))
    for _ in range(warmup_calls + (schedule.total_steps or 0)):
        matmul_add(x, w, b)
    autoprof.flush()  # wait for every artifact of the run
    session = getattr(matmul_add, "autoprof_session", None)
    if session is None:
        print("autoprof is off (AUTOPROF=0): no run written")
        return 0
    run_dir: Path | None = session.run_dir
    if run_dir is None:
        print("no run written (the folder is not writable)")
        return 1
    print(f"run folder: {run_dir}  ({n}x{n} {str(dtype).removeprefix('torch.')} on {device})")
    print(_verdict_line(run_dir))
    return 0


def _verdict_line(run_dir: Path) -> str:
    try:
        import autoprof as package

        verdict = package.load(run_dir).verdict()
        return f"verdict: {verdict.kind}: {verdict.reason}"
    except Exception as exc:  # the analysis layer may be missing or reject the run
        return f"verdict unavailable ({type(exc).__name__}: {exc})"


if __name__ == "__main__":
    sys.exit(main())
