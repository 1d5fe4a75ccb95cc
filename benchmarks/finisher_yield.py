"""How much the run's finisher slows the program after its window when no core is idle.

    .venv/bin/python benchmarks/finisher_yield.py [--repeats 3] [--out FILE.json | FOLDER]
    PYTHONPATH=. python benchmarks/finisher_yield.py --out OUT   # a machine without the venv

Each trial is a fresh process whose loop keeps every core busy (torch intra-op threads, one
per core, on a 64x64 matmul plus 20 small ops per call). It runs the undecorated step for
1.5 s, then the ``@autoprof`` one through the default schedule (the window, handed over to
the finisher at its end), then 3 s more while the finisher works; the loop's calls are
counted per 100 ms bucket. The pace before is the median bucket of the 1.5 s before the
window; the slowdown is that pace over the worst bucket after the window (1.0: untouched;
the goal is at most 1.2). Three variants, interleaved: ``shipped`` (the finisher waits at
nice 19 for an idle core, then works at ``SCHED_IDLE``: ``record/finisher/cpu_gate.py``),
``no_wait`` (it works at ``SCHED_IDLE`` at once: ``AUTOPROF_FINISH_YIELD_S=0``, the finisher
as it was before the wait) and ``no_finisher`` (no finisher process at all: the loop's own
spread after a window). Results print as JSON, side by side, with each variant's median over
``no_finisher``'s, the CPU count and the load average (other processes on the
machine take their share of the cores too: read the ratios, not the absolute slowdown). ``--out``
names the JSON file, or a folder to write ``finisher_yield.json`` into.
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

TRIAL = r"""
import json, os, sys, time
import torch
from autoprof import autoprof
from autoprof.record import export
if sys.argv[1] == "no_finisher":
    def no_finisher(*args, **kwargs):
        raise OSError("no finisher (benchmark)")
    export.Finisher.start = classmethod(lambda cls, *a, **k: no_finisher())
torch.set_num_threads(os.cpu_count() or 1)
a, b = torch.randn(64, 64), torch.randn(64)

def body():
    y = a @ a
    for _ in range(20):
        b.add_(1.0).mul_(0.5)
    return y

step = autoprof(name="yield_bench")(body)
BUCKET_S = 0.1
def run_for(fn, seconds):
    counts, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        stop, n = time.perf_counter() + BUCKET_S, 0
        while time.perf_counter() < stop:
            fn(); n += 1
        counts.append(n)
    return counts

before = run_for(body, 1.5)  # the same work, never profiled
from autoprof.record.options import Schedule
for _ in range(3 + Schedule().total_steps):  # warm-up calls and the schedule: the window
    step()
after = run_for(step, 3.0)  # pass-through calls while the finisher works
print(json.dumps({"before": before, "after": after}))
"""


VARIANTS = ("shipped", "no_wait", "no_finisher")


def trial(variant: str, out_dir: str) -> dict[str, float]:
    env = {**os.environ, "AUTOPROF_DIR": out_dir}
    if variant == "no_wait":
        env["AUTOPROF_FINISH_YIELD_S"] = "0"
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", TRIAL, variant], env=env,
                          text=True,
                          capture_output=True, timeout=300, check=True)
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    pace = statistics.median(counts["before"][2:])  # calls per bucket, steady
    worst = min(counts["after"])
    return {"pace_calls_per_100ms": pace, "worst_after_calls_per_100ms": worst,
            "slowdown": round(pace / max(worst, 1), 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    load_start, started = os.getloadavg()[0], time.monotonic()
    with tempfile.TemporaryDirectory() as out_dir:
        for _ in range(args.repeats):
            for variant in VARIANTS:
                results[variant].append(trial(variant, out_dir))
    medians = {v: statistics.median(r["slowdown"] for r in rs) for v, rs in results.items()}
    report = {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0],
              "load_avg_1m_start": load_start, "python": sys.version.split()[0],
              "seconds": round(time.monotonic() - started, 1), "trials": results,
              "median_slowdown": medians,
              "over_no_finisher": {v: round(m / medians["no_finisher"], 2)
                                   for v, m in medians.items()}}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        out = args.out if args.out.suffix == ".json" else args.out / "finisher_yield.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


if __name__ == "__main__":
    main()
