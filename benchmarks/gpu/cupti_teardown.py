"""Does letting CUPTI go at the window's end keep the program's calls after it at their pace?

Run on a CUDA machine from the repository root (msgspec on ``PYTHONPATH``)::

    PYTHONPATH=. python benchmarks/gpu/cupti_teardown.py --out OUT [--reps 2]
        [--workloads seed_512,mlp_infer_b32,sync_nonzero_b4096,graph_program] [--device cpu]
        [--profiler-warmup 2]

Each recording is the truth suite's ``record.py`` (a fresh process: 5 untraced warm-up calls,
its schedule, 5 calls after it; ``--profiler-warmup 2`` adds the source-lines step of
autoprof's default schedule, every iteration timed with CUDA events) under
one of three environments, interleaved workload by workload:

- ``kept``: ``TEARDOWN_CUPTI=0`` (CUPTI left attached after the trace: autoprof before it
  set the variable, and a user who turns teardown off);
- ``autoprof``: the variable unset (autoprof sets ``TEARDOWN_CUPTI=1`` just before its last
  trace stops, on CUDA 12.6 or newer: ``autoprof/record/session/cupti.py``);
- ``preset``: ``TEARDOWN_CUPTI=1`` from the process's start.

Per recording: ``after_x``, the median iteration after the window over the fastest untraced
warm-up iteration (after the first). ``OUT/cupti_teardown.json`` holds every recording and
the median ``after_x`` of each environment, and each recording's ``kernels_recorded`` (the
kernels its trace holds: CUPTI torn down too early leaves none). ``graph_program`` replays
a CUDA graph after the window: it must run to the end under every environment.
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
ENVIRONMENTS: dict[str, dict[str, str]] = {
    "kept": {"TEARDOWN_CUPTI": "0"}, "autoprof": {}, "preset": {"TEARDOWN_CUPTI": "1"}}
WORKLOADS = "seed_512,mlp_infer_b32,sync_nonzero_b4096,graph_program"


def _kernels(run_dir: Path) -> int:
    """GPU kernels in the run's traces: a teardown at the wrong moment leaves none."""
    count = 0
    for trace in run_dir.glob("*.pt.trace.json*"):
        opener = gzip.open if trace.suffix == ".gz" else open
        with opener(trace, "rt", encoding="utf-8") as f:
            events = json.load(f).get("traceEvents", [])
        count += sum(1 for e in events if e.get("cat") == "kernel")
    return count


def _record(workload: str, env_name: str, work: Path, device: str,
            profiler_warmup: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TEARDOWN_CUPTI"}
    env.update(ENVIRONMENTS[env_name])
    out = work / f"{workload}-{env_name}"
    argv = [sys.executable, str(HERE / "truth" / "record.py"), "--workload", workload,
            "--out", str(out), "--device", device, "--profiler-warmup", str(profiler_warmup)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    row: dict[str, Any] = {"workload": workload, "environment": env_name,
                           "rc": done.returncode}
    record = out / "record.json"
    if done.returncode != 0 or not record.exists():
        row["error"] = done.stderr[-600:]
        return row
    recorded = json.loads(record.read_text())
    phases = recorded["iteration_ms_by_phase"]
    if recorded.get("run"):
        row["kernels_recorded"] = _kernels(out / recorded["run"])
    warm = min(phases["warmup"][1:])
    after = statistics.median(phases["after"])
    row.update(warm_ms=round(warm, 4), after_ms=round(after, 4), after_x=round(after / warm, 3),
               after_all_ms=[round(t, 4) for t in phases["after"]])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--workloads", default=WORKLOADS)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--profiler-warmup", type=int, default=1,
                        help="2: each recording has autoprof's source-lines step")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            for workload in args.workloads.split(","):
                for env_name in ENVIRONMENTS:
                    rows.append(_record(workload, env_name, Path(tmp), args.device,
                                        args.profiler_warmup))
                    print(json.dumps(rows[-1]), flush=True)
    medians = {name: statistics.median([r["after_x"] for r in rows
                                        if r["environment"] == name and "after_x" in r] or [0])
               for name in ENVIRONMENTS}
    report = {"profiler_warmup": args.profiler_warmup, "medians_after_x": medians,
              "recordings": rows}
    (args.out / "cupti_teardown.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(medians))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
