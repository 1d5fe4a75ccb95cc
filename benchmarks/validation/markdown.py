"""The results tables as docs/validation.md shows them: `python -m
benchmarks.validation.markdown [DIR]` prints one markdown table per results file (default
`benchmarks/validation/results/`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.validation.sets import RESULTS

PAIRS_HEAD = ("| set | pairs | within 25% | median \\|error\\| | largest \\|error\\| | "
              "top pick = best fix measured |\n| --- | --- | --- | --- | --- | --- |")
REPEAT_HEAD = ("| set | fixes timed twice | within 10% | median \\|difference\\| | "
               "largest \\|difference\\| |\n| --- | --- | --- | --- | --- |")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def pairs_row(name: str, s: dict[str, Any]) -> str:
    return (f"| {name} | {s['pairs']} | {s['within_25_pct']} | "
            f"{_pct(s['median_abs_error_pct'])} | {_pct(s['max_abs_error_pct'])} | "
            f"{s['top_pick_best']} of {s['workloads']} |")


def repeat_row(name: str, s: dict[str, Any]) -> str:
    return (f"| {name} | {s['fixes']} | {s['within_10_pct']} | "
            f"{_pct(s['median_abs_difference_pct'])} | {_pct(s['max_abs_difference_pct'])} |")


def pooled(sets: dict[str, Any]) -> dict[str, Any]:
    """Every set's pairs as one: the summary over all of them."""
    errors = sorted(abs(p["error_pct"]) for t in sets.values() for p in t["pairs"])
    n = len(errors)
    median = (errors[(n - 1) // 2] + errors[n // 2]) / 2 if n else None
    return {"pairs": n, "within_25_pct": sum(e <= 25.0 for e in errors),
            "median_abs_error_pct": median, "max_abs_error_pct": errors[-1] if n else None,
            "top_pick_best": sum(t["summary"]["top_pick_best"] for t in sets.values()),
            "workloads": sum(t["summary"]["workloads"] for t in sets.values())}


def table(stem: str, results: dict[str, Any]) -> str:
    """One results file's table, one row per set (and one over all sets)."""
    sets: dict[str, Any] = results["sets"]
    if stem == "repeat":
        return "\n".join([REPEAT_HEAD] + [repeat_row(n, t["floor"]) for n, t in sets.items()])
    rows = [pairs_row(n, t["summary"]) for n, t in sets.items()]
    if "pairs" in next(iter(sets.values()), {}):
        rows.append(pairs_row("**all sets**", pooled(sets)))
    return "\n".join([PAIRS_HEAD, *rows])


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else RESULTS
    for path in sorted(folder.glob("*.json")):
        results = json.loads(path.read_text())
        if "sets" not in results:  # error_band_pairs.json: the band's input, not a table
            continue
        print(f"### {path.stem} ({results['date']}, {results['machine']})\n")
        print(table(path.stem, results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
