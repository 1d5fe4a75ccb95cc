"""One results file for ``cpu_loader_heldout.py``'s run: per program and fix, the gain
measured by hand beside autoprof's advice (offered, rank, estimate, interval, inside it),
with when, the command, the machine and its load average at the start and the end.

    PYTHONPATH=. .venv/bin/python benchmarks/cpu_loader_heldout.py --out OUT
    PYTHONPATH=. .venv/bin/python benchmarks/cpu_loader_heldout.py --out OUT --compare
    PYTHONPATH=. .venv/bin/python benchmarks/loader_heldout_results.py OUT \\
        --out benchmarks/results-cpu-loader-heldout.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _results import emit, stamp


def rows(truth: dict[str, Any], compare: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (program, fix): measured gain and its spread over rounds beside the advice."""
    out = []
    for name, case in truth["cases"].items():
        judged = compare["cases"][name]
        for label, fix in case["fixes"].items():
            row = judged["fixes"][label]
            out.append({
                "program": name, "fix": label, "best": label == case.get("best_fix"),
                "measured": fix.get("speedup"), "measured_min": fix.get("speedup_min"),
                "measured_max": fix.get("speedup_max"),
                "measured_per_round": fix.get("speedup_per_round"),
                "offered": row["offered"], "rank": row["rank"], "advice": row.get("advice"),
                "predicted": row.get("predicted"), "interval": row.get("interval"),
                "in_interval": row.get("in_interval"), "error": row.get("error"),
                "first_advice": judged.get("first_advice")})
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("run", help="the --out folder of cpu_loader_heldout.py")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    run = Path(args.run)
    truth = json.loads((run / "truth.json").read_text())
    compare = json.loads((run / "compare.json").read_text())
    meta = truth["meta"]
    result = {**stamp("loader_heldout_results.py", argv,
                      torch=meta["machine_start"]["torch"]),
              "measured_by": "python benchmarks/cpu_loader_heldout.py --out OUT",
              "rounds": meta.get("rounds"), "wall_s": meta.get("wall_s"),
              "loadavg_start": meta["machine_start"]["loadavg"],
              "loadavg_end": meta["machine_end"]["loadavg"],
              "measured_at_utc": meta["machine_start"]["date_utc"],
              "totals": compare["totals"], "rows": rows(truth, compare)}
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
