"""The host memory a recording window takes, against the trace it writes: the factor
``autoprof.record.watch.budget.HOST_PER_TRACE`` fits ``Watch(max_host_mb=...)`` with.

    python benchmarks/watch_memory.py [--active 2 8] [--ops 4000] [--out FILE]

Each size runs in a process of its own: a function of ``--ops`` small CPU ops a step,
recorded by ``@autoprof`` for ``--active`` steps (no source-lines step). The process's
resident memory is read before the window's first recorded step and after its last one
(torch.profiler holds the events until the cycle ends), and set against the uncompressed
size of the trace the window wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import emit, stamp

REPO = Path(__file__).resolve().parent.parent

CHILD = """
import glob, gzip, json, os, sys, torch
import autoprof
torch.set_num_threads(1)
out, active, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

x = torch.randn(8)

@autoprof.autoprof(name="mem", activities=["cpu"], out_dir=out, warmup_calls=2,
                   schedule=dict(wait=0, warmup=0, active=active), source_lines=False)
def step():
    y = x
    for _ in range(ops):
        y = y + 1
    return y

for _ in range(2):
    step()
before = rss_mb()
for _ in range(active):
    step()
after = rss_mb()
autoprof.flush()
trace = sum(len(gzip.decompress(open(p, "rb").read()))
            for p in glob.glob(out + "/mem/*/*.pt.trace.json.gz")) / 2**20
print(json.dumps({"active": active, "ops_per_step": ops, "trace_mb": trace,
                  "host_growth_mb": after - before}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--active", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--ops", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    for active in args.active:
        with tempfile.TemporaryDirectory() as out:
            env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_FINISH_YIELD_S": "0"}
            proc = subprocess.run([sys.executable, "-c", CHILD, out, str(active), str(args.ops)],
                                  env=env, capture_output=True, text=True, check=True)
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row["host_per_trace"] = row["host_growth_mb"] / row["trace_mb"]
            rows.append(row)
    import torch

    emit({**stamp("watch_memory.py", argv, torch=torch.__version__), "rows": rows}, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
