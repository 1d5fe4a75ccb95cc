"""How far the median of a sample of steps may stray from the median over every step, for
predictions whose steps vary as real ones do: each replayed prediction's per-step speedups on
the runs under the paths (the whole replay: these runs have fewer steps than the cap), then
the median of ``n`` steps drawn at random from them (4,000 draws with replacement), against
their median over every step. Prints, per ``n``, the 95th percentile of |sample median /
median - 1| over the draws: its median and its largest value over the predictions.

This treats the steps as independent draws from the run's own steps: it estimates what
sampling a long trace whose steps vary as these do would cost (metrics/replay/sample.py), it
does not replay one.

    python benchmarks/replay_sample_error.py tests/analysis/diff/data/h200_planted \
        [--sizes 16 32 64] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DRAWS = 4000
MIN_STEPS = 8  # a prediction over fewer steps says little about the spread of a median


def per_step_speedups(run: Path) -> list[list[float]]:
    """Each replayed prediction's per-step speedups in the run's summary."""
    import autoprof
    import autoprof.analysis.metrics.replay.replay as replay

    seen: list[list[float]] = []
    original = replay.Spread.of

    def of(values: Sequence[float]) -> Any:
        spread = original(values)
        seen.append(list(spread.per_step))
        return spread

    replay.Spread.of = staticmethod(of)  # type: ignore[method-assign]
    try:
        autoprof.load(run).summary()
    finally:
        replay.Spread.of = staticmethod(original)  # type: ignore[method-assign]
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    os.environ["AUTOPROF_CACHE"] = "0"
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    runs = sorted({m.parent for root in args.roots for m in root.glob("**/manifest.json")})
    for run in runs:
        for per in per_step_speedups(run):
            values = np.asarray(per, float)
            if len(values) < MIN_STEPS or not np.isfinite(values).all():
                continue
            median = float(np.median(values))
            for n in args.sizes:
                medians = np.median(rng.choice(values, size=(DRAWS, n)), axis=1)
                p95 = float(np.quantile(np.abs(medians / median - 1.0), 0.95))
                rows.append({"run": str(run), "steps": len(values), "n": n, "p95": p95})
    for n in args.sizes:
        errors = [r["p95"] for r in rows if r["n"] == n]
        if errors:
            print(f"{n} steps: {len(errors)} predictions; 95th-percentile error of the "
                  f"median: median {np.median(errors):.4f}, largest {max(errors):.4f}")
    if args.out:
        args.out.write_text(json.dumps({"draws": DRAWS, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
