"""The first open (load + summary, no cache) at 1M events (``--events`` for another size),
side by side in fresh processes: this checkout with its decode helper, the same checkout
with ``AUTOPROF_DECODE_HELPER=0``, and the package at ``--before`` (``git archive``; helper
off), on the plain and the gzipped synthetic 5-step trace of ``benchmarks/traces.py`` (the
first-open target's).

Each process reports the wall time of ``load()`` and of ``summary()``, the CPU time its
main thread spent in each (``*_cpu_s``: steadier than wall time on a shared machine), its
own peak RSS (``VmHWM``) and the peak of its RSS plus its children's sampled every 20 ms
(``TreeRss``: the helper counts). The three configurations alternate, ``--rounds`` times
per file; cells are medians [min-max], ratios are medians over ``before``'s.

    .venv/bin/python benchmarks/first_open.py --before e5ad67e [--rounds 5] [--events N]
        [--out F.json]
"""

from __future__ import annotations

import argparse
import gzip
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

N_EVENTS, STEPS = 1_000_000, 5
CONFIGS = ("before", "helper", "alone")

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[3])
from _measure import TreeRss, proc_status_mb
import autoprof
assert autoprof.__file__.startswith(sys.argv[1]), autoprof.__file__
from autoprof.analysis.run import load
import autoprof.analysis.report.summary
import resource
def cpu():  # this thread's CPU time (not the cache writer's, not the decode helper's)
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime
with TreeRss() as tree:
    t0, c0 = time.perf_counter(), cpu()
    run = load(sys.argv[2])
    t1, c1 = time.perf_counter(), cpu()
    load_peak_mb = proc_status_mb("self", "VmHWM")
    run.summary()
    t2, c2 = time.perf_counter(), cpu()
print(json.dumps({"load_s": t1 - t0, "summary_s": t2 - t1, "open_s": t2 - t0,
                  "load_cpu_s": c1 - c0, "summary_cpu_s": c2 - c1, "open_cpu_s": c2 - c0,
                  "peak_mb": proc_status_mb("self", "VmHWM"), "load_peak_mb": load_peak_mb,
                  "tree_peak_mb": tree.peak_mb,
                  "rows": len(run.events)}))
"""


def _run(tree: Path, trace: Path, helper: bool) -> dict[str, Any]:
    env = {**os.environ, "AUTOPROF_CACHE": "0", "AUTOPROF_DECODE_HELPER": "1" if helper else "0"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(trace), str(HERE)],
                          env=env, capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the revision to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=N_EVENTS, help="events in the trace")
    parser.add_argument("--work", type=Path, default=HERE / "out")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    plain = ensure_trace(args.work / "traces", args.events, STEPS)
    zipped = plain.with_name("trace.json.gz")
    if not zipped.exists():
        zipped.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=6))
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        before = compiled_sides(args.before, Path(tmp) / "before")
        for trace in (plain, zipped):
            runs: dict[str, list[dict[str, Any]]] = {c: [] for c in CONFIGS}
            for i in range(args.rounds):
                order = CONFIGS if i % 2 == 0 else tuple(reversed(CONFIGS))
                for config in order:
                    tree = before if config == "before" else REPO
                    runs[config].append(_run(tree, trace, helper=config == "helper"))
            results[trace.name] = runs
    print(f"| file | measure | {' | '.join(CONFIGS)} | helper / before | helper / alone |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, runs in results.items():
        for key in ("open_s", "load_s", "summary_s", "open_cpu_s", "load_cpu_s",
                    "summary_cpu_s", "peak_mb", "load_peak_mb", "tree_peak_mb"):
            cols = [[r[key] for r in runs[c]] for c in CONFIGS]
            med = [statistics.median(c) for c in cols]
            print(f"| {name} | {key} | {' | '.join(cell(c) for c in cols)} | "
                  f"{med[1] / med[0]:.3f} | {med[1] / med[2]:.3f} |")
    if args.out:
        report = {"before": args.before, "rounds": args.rounds, "events": args.events,
                  "results": results,
                  "load_average": os.getloadavg(), "cpus": os.cpu_count()}
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
