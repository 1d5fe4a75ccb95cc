"""A recorded step's cost on two source trees, side by side: a trivial CPU function under
``@autoprof`` (and ``@autoprof(watch=...)``), 598 recorded steps per process, each step timed
on the process's CPU clock, the mean of the fastest 500; one process per tree and mode,
interleaved rounds (the order flips every round), the median over rounds and the ratio.

    python benchmarks/window_step_cost.py --base /path/to/main --new . --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import sys, tempfile, time, torch, autoprof
torch.set_num_threads(1)
x = torch.ones(2)
watch = dict(signal=False) if sys.argv[1] == "watch" else None

@autoprof.autoprof(name="s", out_dir=tempfile.mkdtemp(), activities=["cpu"], warmup_calls=1,
                   schedule=dict(wait=0, warmup=1, active=600), watch=watch)
def f():
    return x + 1

f(); f()
times = []
for _ in range(598):
    t0 = time.process_time_ns(); f(); times.append(time.process_time_ns() - t0)
times.sort()
print(sum(times[:500]) / 500 / 1000)
"""


def _one(tree: str, mode: str) -> float:
    env = {**os.environ, "PYTHONPATH": tree, "AUTOPROF_FINISH_YIELD_S": "0"}
    done = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, capture_output=True,
                          text=True, cwd=tree, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trees = [("base", args.base), ("new", args.new)]
    for mode in ("plain", "watch"):
        got: dict[str, list[float]] = {"base": [], "new": []}
        for r in range(args.rounds):
            for name, tree in trees if r % 2 == 0 else trees[::-1]:
                got[name].append(_one(tree, mode))
        base, new = statistics.median(got["base"]), statistics.median(got["new"])
        print(json.dumps({"mode": mode, "base_us": round(base, 2), "new_us": round(new, 2),
                          "new_over_base": round(new / base, 3), "base_all": got["base"],
                          "new_all": got["new"], "load_avg": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
