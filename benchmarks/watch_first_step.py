"""How well a window's first recorded step predicts its trace: the heap growth of that step
(what autoprof measures to fit a watched function's first window to ``Watch.max_trace_mb``)
against the uncompressed trace per recorded step, for steps of N small CPU ops.

    python benchmarks/watch_first_step.py --ops 200 2000 8000

prints one line per size: trace MB a step, heap MB of the first step, and their ratio
(``TRACE_PER_HEAP`` in autoprof/record/session/budget_fit.py must be at least the largest).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import glob, json, os, pathlib, sys, torch
import autoprof
from autoprof.record.watch.budget import trace_bytes
torch.set_num_threads(1)
x, ops, out = torch.ones(4), int(sys.argv[1]), sys.argv[2]

@autoprof.autoprof(name="r", out_dir=out, activities=["cpu"], warmup_calls=1,
                   schedule=dict(wait=0, warmup=1, active=4), watch=dict(signal=False))
def step():
    y = x
    for _ in range(ops):
        y = y + 1
    return y

for _ in range(8):
    step()
autoprof.flush()
(m,) = glob.glob(out + "/r/*/manifest.json")
record = json.load(open(m))
traced = sum(trace_bytes(pathlib.Path(t)) for t in glob.glob(os.path.dirname(m) + "/*.gz"))
print(json.dumps({"ops": ops, "trace_mb_per_step": traced / record["steps_recorded"] / 2**20,
                  "first_step_heap_mb": record["budget"]["first_step_host_mb"]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, nargs="+", default=[200, 2000, 8000])
    args = parser.parse_args()
    repo = Path(__file__).resolve().parents[1]
    for ops in args.ops:
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run([sys.executable, "-c", CHILD, str(ops), out], check=True,
                                  capture_output=True, text=True, cwd=repo)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        row["trace_per_heap"] = round(row["trace_mb_per_step"] / row["first_step_heap_mb"], 3)
        print(json.dumps(row))


if __name__ == "__main__":
    main()
