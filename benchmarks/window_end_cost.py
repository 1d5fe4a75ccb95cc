"""The time the program is blocked at the end of the window (target 5's third row) on two
source trees and for the hand-written loop: fresh processes of ``_workers.py export`` (1,250
recorded steps of the 64x64 ``matmul + add``, ~10k trace events), the base tree, the new
tree and the hand-written ``prof.stop()`` + ``export_chrome_trace`` in a rotating order;
medians of each, and each tree's median over the hand-written one.

    python benchmarks/window_end_cost.py --base /path/to/main --new . --pairs 7
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_WORKERS = Path("benchmarks") / "_workers.py"


def _blocked_s(tree: str, kind: str, active: int) -> float:
    """One fresh process of the export task in ``tree``: its blocked time, s."""
    out = tempfile.mkdtemp(prefix="autoprof-window-end-")
    try:
        kwargs = {"kind": kind, "active": active, "warmup_calls": 50, "trailing": 5, "out": out}
        done = subprocess.run([sys.executable, str(Path(tree) / _WORKERS), "export",
                               json.dumps(kwargs)], capture_output=True, text=True, cwd=tree,
                              env={**os.environ, "PYTHONPATH": tree}, check=True)
        line = [t for t in done.stdout.splitlines() if t.startswith("{")][-1]
        return float(json.loads(line)["blocked_s"])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--pairs", type=int, default=7, help="processes of each kind")
    parser.add_argument("--active", type=int, default=1250, help="recorded steps")
    args = parser.parse_args()
    runs = [("base", args.base, "autoprof"), ("new", args.new, "autoprof"),
            ("hand", args.new, "torch")]
    got: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    loads = [os.getloadavg()[0]]
    for i in range(args.pairs):
        for name, tree, kind in runs[i % 3:] + runs[:i % 3]:
            got[name].append(_blocked_s(tree, kind, args.active))
        loads.append(os.getloadavg()[0])
    medians = {name: statistics.median(v) for name, v in got.items()}
    print(json.dumps({
        "blocked_s": {name: round(m, 4) for name, m in medians.items()},
        "blocked_s_each": {name: [round(x, 4) for x in v] for name, v in got.items()},
        "base_over_hand": round(medians["base"] / medians["hand"], 3),
        "new_over_hand": round(medians["new"] / medians["hand"], 3),
        "load_avg_1min": [round(x, 2) for x in loads],
    }))


if __name__ == "__main__":
    main()
