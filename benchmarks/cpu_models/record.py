"""Record the CPU models and cases under ``@autoprof`` as a user would, one fresh process each.

    .venv/bin/python benchmarks/cpu_models/record.py --out tests/data/cpu_models [NAME ...]

Each case runs its warm-up calls, autoprof's schedule (default: wait 1, warm-up 1, active 3)
and ``AFTER_CALLS`` more calls, CPU activity only, with ``--threads N`` intra-op threads
(default 1) unless the case sets its own. The run folder lands in ``OUT/<name>/<run_id>/``
(an older folder of the same name is replaced); ``OUT/recording.json`` holds, per case,
every call's time on the user's own clock with its schedule phase, the intra-op thread
count, the CPUs this process may run on and the load average before and after: what the
analysis cannot see in the trace, kept for the tests that check the findings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
AFTER_CALLS = 3


def _phases(warmup: int, schedule: dict[str, int]) -> list[str]:
    return (["warmup"] * warmup + ["wait"] * schedule.get("wait", 1)
            + ["profiler_warmup"] * schedule.get("warmup", 1)
            + ["active"] * schedule.get("active", 3) + ["after"] * AFTER_CALLS)


def _trace_kib(run_dir: Path) -> float:
    return sum(p.stat().st_size for p in run_dir.glob("*.pt.trace.json*")) / 1024


def record_one(name: str, out: Path, threads: int) -> dict[str, Any]:
    """Record ``name`` in this process; returns its entry of recording.json."""
    sys.path.insert(0, str(HERE))
    import torch
    from cases import CASES, Case
    from models import MODELS

    import autoprof

    case = CASES.get(name) or Case(name, MODELS[name].kind, MODELS[name].build)
    torch.manual_seed(0)
    torch.set_num_threads(case.threads or threads)
    fn, batch = case.build()
    shutil.rmtree(out / name, ignore_errors=True)
    # source_lines off: its second trace (up to 1.2 MB here) is not read by the findings
    step = autoprof.autoprof(name=name, warmup=case.warmup, schedule=case.schedule,
                             activities=("cpu",), out_dir=str(out), source_lines=False)(fn)
    phases = _phases(case.warmup, case.schedule)
    load_before = os.getloadavg()
    starts = []
    for _ in phases:
        starts.append(time.perf_counter())
        step(batch)
    starts.append(time.perf_counter())
    autoprof.flush()
    run_dir = max((out / name).glob("*/manifest.json")).parent
    return {
        "kind": case.kind, "run": str(run_dir.relative_to(out)),
        "intra_op_threads": torch.get_num_threads(), "cpus": len(os.sched_getaffinity(0)),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "torch": torch.__version__, "phases": phases,
        "call_ms": [round((b - a) * 1e3, 4) for a, b in zip(starts, starts[1:], strict=False)],
        "trace_kib": round(_trace_kib(run_dir), 1),
    }


def main() -> None:
    sys.path.insert(0, str(HERE))
    from cases import CASES
    from models import MODELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process's case
    parser.add_argument("names", nargs="*", help=f"default: all of {[*MODELS, *CASES]}")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.one:
        print(json.dumps(record_one(args.one, out, args.threads)))
        return
    record_path = out / "recording.json"
    recording = json.loads(record_path.read_text()) if record_path.exists() else {}
    for name in args.names or [*MODELS, *CASES]:
        cmd = [sys.executable, __file__, "--out", str(out), "--threads", str(args.threads),
               "--one", name]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        entry = json.loads(done.stdout.strip().splitlines()[-1])
        recording[name] = entry
        print(f"{name}: {entry['trace_kib']} KiB, calls ms {entry['call_ms']}", flush=True)
        record_path.write_text(json.dumps(recording, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
