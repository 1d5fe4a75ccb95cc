"""The first open (load + summary, no cache) of realistic GPU traces, side by side in fresh
processes: this checkout against the package at ``--before`` (``git archive``), on committed
H200 runs tiled in time (``gpu_tiled.py``: eager_100, graph_replay, ddp_step at 10x, 100x).

Each process reports the wall and CPU time of ``load()`` and of ``summary()``, its peak RSS
(``VmHWM``; ``load_peak_mb``: the mark when ``load()`` returns), how long each phase the
progress line names took (``loader.phase``), a hash
of the summary JSON, its verdict, top pick and each predicted speedup
(where the replay reads a sample of a long trace's steps the two sides' speedups may differ
in their last digits: the table gives the largest change). The two configurations
alternate, ``--rounds`` times per trace; cells are medians [min-max].

    .venv/bin/python benchmarks/gpu_first_open.py --before main --times 10 100 \
        [--source eager_100 ...] [--rounds 3] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _trees import cell, compiled_sides  # noqa: E402
from gpu_tiled import ensure_tiled  # noqa: E402

CONFIGS = ("before", "after")

_CHILD = r"""
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[3])
from _measure import proc_status_mb
import autoprof
assert autoprof.__file__.startswith(sys.argv[1]), autoprof.__file__
from autoprof.analysis.run import load
from autoprof.analysis.loader.phase import listening
import autoprof.analysis.report.summary
t0, c0 = time.perf_counter(), time.process_time()
run = load(sys.argv[2])
t1, c1 = time.perf_counter(), time.process_time()
load_peak_mb = proc_status_mb("self", "VmHWM")  # the load's own peak
marks = [("(before the first phase)", t1)]
with listening(lambda name: marks.append((name, time.perf_counter()))):
    summary = run.summary()
t2, c2 = time.perf_counter(), time.process_time()
phases = [[name, b - a] for (name, a), (_, b) in zip(marks, marks[1:] + [("", t2)])]
text = json.dumps(summary, allow_nan=False, default=str, sort_keys=True)
opps = summary.get("opportunities") or []
print(json.dumps({"load_s": t1 - t0, "summary_s": t2 - t1, "open_s": t2 - t0,
                  "load_cpu_s": c1 - c0, "summary_cpu_s": c2 - c1,
                  "peak_mb": proc_status_mb("self", "VmHWM"), "load_peak_mb": load_peak_mb,
                  "rows": len(run.events),
                  "summary_sha1": hashlib.sha1(text.encode()).hexdigest(),
                  "phases": phases, "verdict": summary.get("verdict"),
                  "top": [opps[0].get("cause"), opps[0].get("fix")] if opps else None,
                  "speedups": {str(o.get("cause")): o["predicted_speedup"] for o in opps
                               if isinstance(o.get("predicted_speedup"), (int, float))}}))
"""


def _run(tree: Path, run: Path) -> dict[str, Any]:
    env = {**os.environ, "AUTOPROF_CACHE": "0", "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(run), str(HERE)],
                          env=env, capture_output=True, text=True, check=True, timeout=900)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _table(results: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    print("| trace | measure | before | after | after / before |")
    print("| --- | --- | --- | --- | --- |")
    for name, runs in results.items():
        for key in ("open_s", "load_s", "summary_s", "summary_cpu_s", "peak_mb",
                    "load_peak_mb"):
            if any(key not in r for c in CONFIGS for r in runs[c]):
                continue
            cols = [[r[key] for r in runs[c]] for c in CONFIGS]
            med = [statistics.median(c) for c in cols]
            print(f"| {name} | {key} | {cell(cols[0])} | {cell(cols[1])} | "
                  f"{med[1] / med[0]:.3f} |")
        for config in CONFIGS:
            longest = [max(r.get("phases") or [["", 0.0]], key=lambda p: p[1])
                       for r in runs[config]]
            names = sorted({p[0] for p in longest})
            print(f"| {name} | longest phase of the summary, s ({config}) | "
                  f"{cell([p[1] for p in longest])} | {'; '.join(names)} | |")
            ratio = [r["open_s"] / r["load_s"] for r in runs[config]]
            print(f"| {name} | first open / load ({config}) | {cell(ratio)} | | |")
            cpu = [(r["load_cpu_s"] + r["summary_cpu_s"]) / r["load_cpu_s"] for r in runs[config]]
            print(f"| {name} | first open / load, CPU time ({config}) | {cell(cpu)} | | |")
        hashes = {r["summary_sha1"] for c in CONFIGS for r in runs[c]}
        print(f"| {name} | same summary on both sides | {len(hashes) == 1} | | |")
        picks = {json.dumps([r.get("verdict"), r.get("top")]) for c in CONFIGS for r in runs[c]}
        print(f"| {name} | same verdict and top pick on both sides | {len(picks) == 1} | | |")
        print(f"| {name} | largest predicted_speedup change, after / before - 1 | "
              f"{_largest_change(runs):.2e} | | |")


def _largest_change(runs: dict[str, list[dict[str, Any]]]) -> float:
    """The largest |after / before - 1| of any cause's predicted_speedup (inf where the
    two sides predict different causes)."""
    before, after = runs["before"][0].get("speedups", {}), runs["after"][0].get("speedups", {})
    if set(before) != set(after):
        return float("inf")
    return max((abs(after[k] / before[k] - 1.0) for k in before if before[k]), default=0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the revision to compare with")
    parser.add_argument("--times", type=int, nargs="+", default=[10])
    parser.add_argument("--source", action="append")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=HERE / "out" / "gpu_tiled")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    runs = [(f"{s}-x{t}", ensure_tiled(args.work, s, t))
            for s in args.source or ["eager_100"] for t in args.times]
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        before = compiled_sides(args.before, Path(tmp) / "before")
        for name, run in runs:
            done: dict[str, list[dict[str, Any]]] = {c: [] for c in CONFIGS}
            for i in range(args.rounds):
                for config in CONFIGS if i % 2 == 0 else tuple(reversed(CONFIGS)):
                    done[config].append(_run(before if config == "before" else REPO, run))
            results[name] = done
    _table(results)
    if args.out:
        report = {"before": args.before, "rounds": args.rounds, "started": started,
                  "load_average": {"start": load_start, "end": os.getloadavg()},
                  "cpus": os.cpu_count(), "results": results}
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
