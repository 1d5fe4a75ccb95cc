"""How far two profiler-free processes agree on the same fix: the ground truth's own floor.

    python benchmarks/gpu/truth/repeat.py GROUND_TRUTH.json REPEAT.json

Both files are ``drive.py`` outputs for the same workloads (the second from
``drive.py --ground-truth-only``: the same program and fixes timed again in fresh processes
on the same machine). For every fix timed in both, the iteration speedup (baseline median over
the fix's median) of each and their difference in % of the repeat's. A prediction cannot be
judged more finely than the measurement repeats: the median and the largest difference are
that floor.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Agreement:
    workload: str
    fix: str
    first: float  # the speedup measured in the first process
    repeat: float  # ... and in the repeat's

    @property
    def difference_pct(self) -> float:
        return 100.0 * (self.first - self.repeat) / self.repeat


def _speedups(entry: dict[str, Any] | None) -> dict[str, float]:
    """Each fix's iteration speedup: the baseline's median over the fix's, both timed in one
    process (with per-fix processes, each over the baseline timed beside it)."""
    speedups = ((entry or {}).get("ground_truth") or {}).get("speedups") or {}
    return {fix: float(s["iter"]["speedup"]) for fix, s in speedups.items()
            if s.get("iter", {}).get("speedup")}


def agreements(first: Path, repeat: Path) -> list[Agreement]:
    """Every fix timed in both files, in the first file's order."""
    a = json.loads(first.read_text())["workloads"]
    b = json.loads(repeat.read_text())["workloads"]
    out = []
    for name, entry in a.items():
        again = _speedups(b.get(name))
        out += [Agreement(name, fix, x, again[fix]) for fix, x in _speedups(entry).items()
                if fix in again]
    return out


def floor(rows: list[Agreement]) -> dict[str, float]:
    """The median and largest |difference| in %, and how many fixes."""
    diffs = [abs(r.difference_pct) for r in rows]
    return {"fixes": len(rows), "median_abs_difference_pct": statistics.median(diffs),
            "max_abs_difference_pct": max(diffs),
            "within_10_pct": sum(d <= 10.0 for d in diffs)}


def main() -> None:
    rows = agreements(Path(sys.argv[1]), Path(sys.argv[2]))
    print("| workload | fix | first process | repeat | difference |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r.workload} | `{r.fix}` | {r.first:.2f}x | {r.repeat:.2f}x | "
              f"{r.difference_pct:+.0f}% |")
    f = floor(rows)
    print(f"\n{f['fixes']} fixes: median |difference| {f['median_abs_difference_pct']:.1f}%, "
          f"largest {f['max_abs_difference_pct']:.1f}%, {f['within_10_pct']} within 10%")


if __name__ == "__main__":
    main()
