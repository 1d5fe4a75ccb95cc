"""Regenerate the lab's results tables: `python -m benchmarks.validation [--sets NAME ...]
[--tables NAME ...] [--out DIR]` (docs/validation.md).

Each table is written to `DIR/<table>.json` (default `benchmarks/validation/results/`) with
the machine it was computed on and the date; a summary line per set is printed, the lines
docs/validation.md shows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.validation.sets import RESULTS, truth_sets


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    from benchmarks.validation.tables import TABLES

    parser = argparse.ArgumentParser(prog="python -m benchmarks.validation",
                                     description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--sets", nargs="+", help="truth sets by folder name (default: all)")
    parser.add_argument("--tables", nargs="+", choices=sorted(TABLES), default=list(TABLES))
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for <table>.json")
    return parser.parse_args(argv)


def _line(name: str, table: dict[str, Any]) -> str:
    s = table.get("summary") or table.get("floor") or {}
    if "fixes" in s:
        return (f"{name}: {s['fixes']} fixes timed twice, median |difference| "
                f"{s['median_abs_difference_pct']:.1f}%, largest "
                f"{s['max_abs_difference_pct']:.1f}%, {s['within_10_pct']} within 10%")
    if not s.get("pairs"):
        return f"{name}: no pair"
    return (f"{name}: {s['pairs']} pairs, {s['within_25_pct']} within 25%, median |error| "
            f"{s['median_abs_error_pct']:.1f}%, largest {s['max_abs_error_pct']:.1f}%, top "
            f"pick the best fix measured in {s['top_pick_best']} of {s['workloads']}")


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.validation.tables import TABLES

    args = _parse(argv)
    folders = truth_sets(args.sets)
    args.out.mkdir(parents=True, exist_ok=True)
    made = {"date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()} {platform.system()}, Python "
                       f"{platform.python_version()}"}
    for name in args.tables:
        print(f"## {name}")
        sets: dict[str, Any] = {}
        for folder in folders:
            table = TABLES[name](folder)
            if table is not None:
                sets[folder.name] = table
                print(f"- {_line(folder.name, table)}", flush=True)
        path = args.out / f"{name}.json"
        path.write_text(json.dumps({**made, "sets": sets}, indent=1) + "\n")
        print(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
