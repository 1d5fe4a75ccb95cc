"""Is the seed's verdict the same in every fresh process?

Records the seed experiment (bf16 ``x @ w + b``, ``@autoprof`` with its defaults, as in the
README's ten lines, 9 calls) in ``--processes`` fresh processes per size, then prints each
run's verdict::

    PYTHONPATH=. python benchmarks/gpu/seed_verdicts.py --out OUT            # record (CUDA)
    PYTHONPATH=. python benchmarks/gpu/seed_verdicts.py --out OUT --analyse  # verdicts only

The run folders land under ``OUT/runs/seed<size>/``; ``--analyse`` reads them (on any
machine with the analysis installed; ``--runs`` for another folder, e.g. the committed
``tests/data/gpu_h100_seed``) and writes ``OUT/seed_verdicts.json``: per run, the verdict, the
verdict the mean step would give, the sides of the step it was read from and the steps' times.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SNIPPET = """
import torch
from autoprof import autoprof

@autoprof(name="seed{size}")
def matmul_add(x, w, b):
    return torch.matmul(x, w) + b

x, w, b = (torch.randn({size}, {size}, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(9):
    matmul_add(x, w, b)
"""


def record(out: Path, sizes: list[int], processes: int) -> None:
    env = {**os.environ, "AUTOPROF_DIR": str(out / "runs")}
    for _ in range(processes):
        for size in sizes:  # interleaved: a drift of the machine touches every size alike
            subprocess.run([sys.executable, "-c", SNIPPET.format(size=size)], env=env,
                           check=True)


def analyse(runs: Path) -> list[dict[str, Any]]:
    import autoprof
    from autoprof.analysis.metrics.verdict import classify_sides

    rows = []
    for run_dir in sorted(runs.glob("seed*/*")):
        run = autoprof.load(run_dir)
        verdict = run.analysis.verdict
        mean = run.analysis.breakdown.mean()
        per_step = mean["per_step"]
        rows.append({"run": f"{run_dir.parent.name}/{run_dir.name}", "verdict": verdict.kind,
                     "verdict_of_the_mean_step": classify_sides(mean["buckets_pct"], True),
                     "sides_pct": verdict.evidence.get("sides_pct"),
                     "step_us": [round(float(st["step_us"]), 1) for st in per_step]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 4096])
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--analyse", action="store_true")
    parser.add_argument("--runs", type=Path, default=None,
                        help="with --analyse: the folder of seed<size>/ runs (OUT/runs)")
    args = parser.parse_args()
    if not args.analyse:
        record(args.out, args.sizes, args.processes)
        return
    rows = analyse(args.runs or args.out / "runs")
    args.out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        print(row["run"], row["verdict"], row["verdict_of_the_mean_step"], row["step_us"])
    (args.out / "seed_verdicts.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
