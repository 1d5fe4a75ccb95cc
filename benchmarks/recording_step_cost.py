"""autoprof's own cost per recorded step on two source trees: in one process, rounds of 3000
recorded steps of a trivial CPU function under ``@autoprof`` alternate with the same loop
written by hand (torch.profiler, ``record_function``, ``prof.step()``, the same profiler
options); each round's median step on the wall clock, the median over rounds, and autoprof's
step minus the hand-written one. One process per tree, the trees alternating (the order flips
every round). Target 2 of ``benchmarks/run.py`` measures the same steps around a matmul.

    python benchmarks/recording_step_cost.py --base /path/to/main --new . --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import statistics, sys, tempfile, time, torch, autoprof
import torch.profiler as tp
torch.set_num_threads(1)
x = torch.ones(2)
N, ROUNDS = 3000, int(sys.argv[1])
OPTIONS = dict(record_shapes=True, with_flops=True)  # autoprof's defaults

def body():
    return x + 1

def with_autoprof(i):
    f = autoprof.autoprof(name=f"s{i}", out_dir=tempfile.mkdtemp(), activities=["cpu"],
                          warmup_calls=1, schedule=dict(wait=1, warmup=1, active=N))(body)
    f(); f(); f()
    clock, took = time.perf_counter_ns, []
    for _ in range(N - 1):
        t0 = clock(); f(); took.append(clock() - t0)
    autoprof.flush()
    return statistics.median(took) / 1000

def by_hand(i):
    clock, took = time.perf_counter_ns, []
    with tp.profile(activities=[tp.ProfilerActivity.CPU], on_trace_ready=lambda p: None,
                    schedule=tp.schedule(wait=1, warmup=1, active=N), **OPTIONS) as prof:
        for k in range(N + 1):
            t0 = clock()
            with tp.record_function("s"):
                body()
            prof.step()
            if k >= 2:
                took.append(clock() - t0)
    return statistics.median(took) / 1000

ours, hand = [], []
for i in range(ROUNDS):
    for run in (with_autoprof, by_hand) if i % 2 == 0 else (by_hand, with_autoprof):
        (ours if run is with_autoprof else hand).append(run(i))
print(statistics.median(ours), statistics.median(hand))
"""


def _one(tree: str, rounds: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": tree, "AUTOPROF_FINISH_YIELD_S": "0"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(rounds)], env=env,
                          capture_output=True, text=True, cwd=tree, check=True)
    ours, hand = done.stdout.strip().splitlines()[-1].split()
    return float(ours), float(hand)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--rounds", type=int, default=5, help="processes per tree")
    parser.add_argument("--inner", type=int, default=4, help="rounds in each process")
    args = parser.parse_args()
    trees = [("base", args.base), ("new", args.new)]
    got: dict[str, list[tuple[float, float]]] = {"base": [], "new": []}
    for r in range(args.rounds):
        for name, tree in trees if r % 2 == 0 else trees[::-1]:
            got[name].append(_one(tree, args.inner))
    out: dict[str, object] = {"load_avg": os.getloadavg()}
    for name, pairs in got.items():
        out[name] = {"autoprof_us": round(statistics.median(p[0] for p in pairs), 2),
                     "hand_us": round(statistics.median(p[1] for p in pairs), 2),
                     "own_us": round(statistics.median(p[0] - p[1] for p in pairs), 2),
                     "hand_over_autoprof": round(statistics.median(p[1] / p[0] for p in pairs), 3)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
