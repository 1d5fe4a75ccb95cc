"""Target 5 on two source trees and for the hand-written loop: fresh processes of
``_workers.py`` (1,250 recorded steps of the 64x64 ``matmul + add``, ~10k trace events), the
base tree, the new tree and the hand-written loop in a rotating order; medians of each.
``--task export`` (the default): the time blocked at the end of the window (the third row;
hand-written: ``prof.stop()`` + ``export_chrome_trace``), and each tree's median over the
hand-written one. ``--task after_window``: the worst 100 ms bucket in 3 s after the window
over the loop's pace before it, and the RSS a finished run added (the first two rows).

    python benchmarks/window_end_cost.py --base /path/to/main --new . --pairs 7
    python benchmarks/window_end_cost.py --base /path/to/main --new . --task after_window
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
_KEPT = {"export": ("blocked_s",), "after_window": ("worst_bucket_ratio", "rss_added_mb")}


def _measure(tree: str, task: str, kind: str, active: int) -> dict[str, float]:
    """One fresh process of ``task`` in ``tree``: the numbers it reports that are kept."""
    out = tempfile.mkdtemp(prefix="autoprof-window-end-")
    try:
        kwargs: dict[str, object] = {"kind": kind, "active": active, "out": out}
        kwargs.update({"warmup_calls": 50, "trailing": 5} if task == "export"
                      else {"seconds": 3.0, "bucket_s": 0.1})
        done = subprocess.run([sys.executable, str(Path(tree) / _WORKERS), task,
                               json.dumps(kwargs)], capture_output=True, text=True, cwd=tree,
                              env={**os.environ, "PYTHONPATH": tree}, check=True)
        line = json.loads([t for t in done.stdout.splitlines() if t.startswith("{")][-1])
        return {key: float(line[key]) for key in _KEPT[task]}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--pairs", type=int, default=7, help="processes of each kind")
    parser.add_argument("--active", type=int, default=1250, help="recorded steps")
    parser.add_argument("--task", choices=sorted(_KEPT), default="export")
    args = parser.parse_args()
    runs = [("base", args.base, "autoprof"), ("new", args.new, "autoprof"),
            ("hand", args.new, "torch")]
    got: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in runs}
    loads = [os.getloadavg()[0]]
    for i in range(args.pairs):
        for name, tree, kind in runs[i % 3:] + runs[:i % 3]:
            got[name].append(_measure(tree, args.task, kind, args.active))
        loads.append(os.getloadavg()[0])
    report: dict[str, object] = {"task": args.task}
    for key in _KEPT[args.task]:
        medians = {name: statistics.median(s[key] for s in v) for name, v in got.items()}
        report[key] = {name: round(m, 4) for name, m in medians.items()}
        report[f"{key}_each"] = {name: [round(s[key], 4) for s in v] for name, v in got.items()}
        report[f"{key}_base_over_hand"] = round(medians["base"] / medians["hand"], 3)
        report[f"{key}_new_over_hand"] = round(medians["new"] / medians["hand"], 3)
    report["load_avg_1min"] = [round(x, 2) for x in loads]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
