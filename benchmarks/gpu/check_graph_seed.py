"""Does ``autoprof.check(..., try_fixes=["cuda-graph"])`` measure what a CUDA graph gives the
seed at 64x64 by hand?

In each of ``--processes`` fresh processes: the seed (bf16 ``x @ w + b`` at 64x64) checked
with ``try_fixes=["cuda-graph"]`` (the what-if's status, its inputs-copied speedup and interval,
its same-inputs speedup and interval, and the summary's replayed prediction), then, in the same
process, the same function timed by hand with CUDA events, 200 calls a block, eager against its
graph called two ways: inputs copied into the static ones then replayed (a loop passing new
tensors), and replayed alone on the inputs it was captured with (a loop passing the same
tensors); 5 blocks each, interleaved; the hand ratios are the median blocks'. Each what-if
number should sit near its hand twin: ``speedup`` near ``hand_speedup``,
``same_inputs_speedup`` near ``hand_same_inputs_speedup``, and the status ``depends on
inputs`` when the first is below 1 and the second above. Writes
``OUT/check_graph_seed.json``::

    PYTHONPATH=. python benchmarks/gpu/check_graph_seed.py --out OUT [--whatif-only]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

PROGRAM = """
import json, statistics, torch, autoprof

def matmul_add(x, w, b):
    return torch.matmul(x, w) + b

x, w, b = (torch.randn(64, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
if WHATIF_ONLY:  # the measuring side alone: no profile, no analysis (a torch-only machine)
    from autoprof.record.whatif import try_fixes
    run, summary = None, {}
    whatif = [t.result.to_dict() for t in try_fixes(matmul_add, (x, w, b), {},
                                                    ["cuda-graph"])[1]]
else:
    run = autoprof.check(matmul_add, x, w, b, try_fixes=["cuda-graph"])
    summary = run.summary()
    whatif = [r for r in summary.get("whatif", []) if r.get("fix") == "cuda-graph"]

static = [t.clone() for t in (x, w, b)]
for _ in range(3):
    matmul_add(*static)
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out = matmul_add(*static)

def eager():
    matmul_add(x, w, b)

def replay():
    for s, t in zip(static, (x, w, b)):
        s.copy_(t)
    graph.replay()

def replay_same():
    graph.replay()

def block(fn, calls=200):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / calls

for fn in (eager, replay, replay_same):
    block(fn)
eager_us, graph_us, same_us = [], [], []
for _ in range(5):
    eager_us.append(block(eager))
    graph_us.append(block(replay))
    same_us.append(block(replay_same))
keys = ("status", "reason", "baseline_us", "fixed_us", "speedup", "speedup_low",
        "speedup_high", "same_inputs_us", "same_inputs_speedup", "same_inputs_speedup_low",
        "same_inputs_speedup_high", "same_inputs_status", "prediction_error_pct",
        "same_inputs_prediction_error_pct")
opp = [o for o in summary.get("opportunities", []) if o.get("fix") == "cuda-graph"]
print(json.dumps({"run": str(run.path) if hasattr(run, "path") else None,
                  "whatif_only": WHATIF_ONLY,
                  "whatif": [{k: r.get(k) for k in keys} for r in whatif],
                  "predicted_speedup": opp[0].get("predicted_speedup") if opp else None,
                  "verdict": summary.get("verdict", {}).get("kind")
                  if isinstance(summary.get("verdict"), dict) else summary.get("verdict"),
                  "eager_us": statistics.median(eager_us),
                  "graph_us": statistics.median(graph_us),
                  "same_inputs_graph_us": statistics.median(same_us),
                  "hand_speedup": statistics.median(eager_us) / statistics.median(graph_us),
                  "hand_same_inputs_speedup": statistics.median(eager_us)
                  / statistics.median(same_us)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--whatif-only", action="store_true",
                        help="time the fix with autoprof.record.whatif.try_fixes alone, no "
                             "profile or summary (where the analysis's packages are missing)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "AUTOPROF_DIR": str(args.out / "runs")}
    rows = []
    for _ in range(args.processes):
        program = f"WHATIF_ONLY = {args.whatif_only}\n{PROGRAM}"
        done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                              text=True, timeout=240)
        line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        row = json.loads(line) if line.startswith("{") else {
            "error": done.stderr[-1500:], "returncode": done.returncode}
        rows.append(row)
        print(json.dumps(row, default=str)[:2000], flush=True)
    (args.out / "check_graph_seed.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
