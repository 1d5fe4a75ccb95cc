"""Where the lab's truth sets live, and the truth scripts it drives.

A truth set is a folder holding `ground_truth.json` (each workload's fixes timed without a
profiler) and the run folders it names. The two tuned first recordings stay under
`tests/data/` because many unit tests load their runs as real-trace fixtures; every held-out
set lives under `benchmarks/validation/data/<set>/`.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRUTH_CODE = REPO / "benchmarks" / "gpu" / "truth"
ROOTS = (REPO / "tests" / "data", REPO / "benchmarks" / "validation" / "data")
RESULTS = REPO / "benchmarks" / "validation" / "results"


def truth_sets(names: list[str] | None = None) -> list[Path]:
    """Every truth set (a folder with `ground_truth.json`), by name; `names` picks some and
    raises naming the ones not found."""
    found = {p.parent.name: p.parent for root in ROOTS if root.is_dir()
             for p in sorted(root.glob("*/ground_truth.json"))}
    if names is None:
        return [found[n] for n in sorted(found, key=_order)]
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"no truth set named {missing} under {[str(r) for r in ROOTS]}")
    return [found[n] for n in names]


def _order(name: str) -> tuple[str, int]:
    """gpu_h200_truth_heldout2 before gpu_h200_truth_heldout10."""
    stem = name.rstrip("0123456789")
    return stem, int(name[len(stem):] or 0)


def truth_code_on_path() -> None:
    """The truth scripts import their siblings by name (`benchmarks/gpu/truth/`)."""
    if str(TRUTH_CODE) not in sys.path:
        sys.path.insert(0, str(TRUTH_CODE))
