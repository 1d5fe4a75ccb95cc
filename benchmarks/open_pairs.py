"""The first open (load + summary, no cache) of traces or run folders, this checkout against a
revision, in alternating fresh processes with the default settings (the decode helper where
it applies, as ``run.py``'s target 4 and ``autoprof summary`` run).

Each process reports the wall time of ``load()`` and ``summary()``, its CPU time, its own
peak RSS (``VmHWM``) and the peak of its RSS plus its children's sampled every 20 ms (the
helper counts). The two trees alternate, ``--pairs`` times a path (which goes first
alternates too); cells are medians [min-max]; the load average is read before and after.
``--events N`` adds the synthetic 5-step trace of N events (``benchmarks/traces.py``).

    .venv/bin/python benchmarks/open_pairs.py --before main --events 100000 --events 1000000 \\
        [PATH ...] [--pairs 5] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _trees import cell, compiled_sides  # noqa: E402

from traces import ensure_trace  # noqa: E402

KEYS = ("open_s", "load_s", "summary_s", "cpu_s", "peak_mb", "tree_peak_mb")

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[3])
from _measure import TreeRss, proc_status_mb
import autoprof
assert autoprof.__file__.startswith(sys.argv[1]), autoprof.__file__
from autoprof.analysis.run import load
import autoprof.analysis.report.summary
with TreeRss() as tree:
    c0, t0 = time.process_time(), time.perf_counter()
    run = load(sys.argv[2])
    t1 = time.perf_counter()
    run.summary()
    t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"load_s": t1 - t0, "summary_s": t2 - t1, "open_s": t2 - t0,
                  "cpu_s": c2 - c0, "peak_mb": proc_status_mb("self", "VmHWM"),
                  "tree_peak_mb": tree.peak_mb, "rows": len(run.events)}))
"""


def _run(tree: Path, path: Path) -> dict[str, Any]:
    env = {**os.environ, "AUTOPROF_CACHE": "0"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(path), str(HERE)],
                          env=env, capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="traces or run folders")
    parser.add_argument("--before", required=True, help="the revision to compare with")
    parser.add_argument("--events", type=int, action="append", default=[],
                        help="add the synthetic 5-step trace of this many events")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=HERE / "out")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    paths = [ensure_trace(args.work / "traces", n, 5) for n in args.events]
    paths += [p.resolve() for p in args.paths]
    load_average = [os.getloadavg()]
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        before = compiled_sides(args.before, Path(tmp) / "before")
        for path in paths:
            runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            for i in range(args.pairs):
                order = ("before", "after") if i % 2 == 0 else ("after", "before")
                for side in order:
                    runs[side].append(_run(before if side == "before" else REPO, path))
            results[str(path)] = runs
    load_average.append(os.getloadavg())
    print("| path | measure | before | after | after / before |")
    print("| --- | --- | --- | --- | --- |")
    for path, runs in results.items():
        for key in KEYS:
            cols = [[r[key] for r in runs[side]] for side in ("before", "after")]
            ratio = statistics.median(cols[1]) / statistics.median(cols[0])
            print(f"| {Path(path).parent.name}/{Path(path).name} | {key} | {cell(cols[0])} | "
                  f"{cell(cols[1])} | {ratio:.3f} |")
    print(f"load average (1, 5, 15 min) before: {load_average[0]}, after: {load_average[1]}")
    if args.out:
        report = {"before": args.before, "pairs": args.pairs, "results": results,
                  "load_average": load_average, "cpus": os.cpu_count()}
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
