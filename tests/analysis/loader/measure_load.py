"""Measure the loader against json/orjson/HTA in fresh processes (not a test; numbers for
docs/loader.md). Run: .venv/bin/python tests/analysis/loader/measure_load.py [--sizes ...]

Each measurement is its own Python process; ``load_s`` excludes imports (numpy, pandas and
autoprof.analysis are imported first, like benchmarks/ does), ``peak_mb`` is the process's
own VmHWM (its peak resident memory). Traces come from support.synthetic
(Kineto layout, ~330 B/event).
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

REPO = Path(__file__).resolve().parents[3]
HTA_PYTHON = REPO / "benchmarks" / ".venv-hta" / "bin" / "python"

CHILD = r"""
import json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
import numpy, pandas
t0 = time.perf_counter()
if mode in ("first", "cached"):
    import autoprof.analysis.loader.load as run_module
elif mode == "orjson":
    import orjson
elif mode == "msgspec_any":
    import msgspec
elif mode == "hta":
    import logging
    from hta.trace_analysis import TraceAnalysis
    logging.getLogger("hta").setLevel(logging.ERROR)
t1 = time.perf_counter(); c1 = time.process_time()
if mode in ("first", "cached"):
    rows = len(run_module.load_data(path).events)
elif mode == "json":
    rows = len(json.load(open(path))["traceEvents"])
elif mode == "orjson":
    rows = len(orjson.loads(open(path, "rb").read())["traceEvents"])
elif mode == "msgspec_any":
    rows = len(msgspec.json.decode(open(path, "rb").read())["traceEvents"])
elif mode == "hta":
    import os
    analysis = TraceAnalysis(trace_dir=os.path.dirname(path))
    rows = sum(len(analysis.t.get_trace(r)) for r in analysis.t.get_ranks())
t2 = time.perf_counter(); c2 = time.process_time()
# VmHWM: this process's own peak (ru_maxrss also counts the parent's at fork time on Linux)
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")]
peak_kib = int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "cpu_s": c2 - c1, "rows": rows,
                  "peak_mb": peak_kib / 1024}))
"""


def run_child(mode: str, path: Path, cache: bool) -> dict[str, float]:
    python = str(HTA_PYTHON) if mode == "hta" else sys.executable
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_CACHE": "1" if cache else "0"}
    done = subprocess.run([python, "-c", CHILD, mode, str(path)], capture_output=True,
                          text=True, env=env, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} on {path} failed: {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(mode: str, path: Path, reps: int) -> dict[str, object]:
    cache = mode == "cached"
    if cache:
        run_child("cached", path, True)  # writes the cache
    runs = [run_child(mode, path, cache) for _ in range(reps)]
    load_s = [r["load_s"] for r in runs]
    return {
        "mode": mode, "events": path.parent.name, "reps": reps,
        "load_s_median": statistics.median(load_s), "load_s_min": min(load_s),
        "load_s_max": max(load_s), "cpu_s_median": statistics.median(r["cpu_s"] for r in runs),
        "import_s_median": statistics.median(r["import_s"] for r in runs),
        "peak_mb_max": max(r["peak_mb"] for r in runs), "rows": runs[0]["rows"],
    }


def main() -> int:
    from support.synthetic import write_synthetic_trace

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", default=["first", "cached", "orjson", "hta"])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            path = Path(folder) / str(size) / "trace.json"
            path.parent.mkdir()
            write_synthetic_trace(path, size)
            for mode in args.modes:
                if mode == "hta" and not HTA_PYTHON.exists():
                    continue
                reps = 1 if mode in ("json", "hta") and size >= 1_000_000 else args.reps
                try:
                    row = measure(mode, path, reps)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"{size:>9} {mode:>12}  failed: {exc}", flush=True)
                    continue
                row["file_mb"] = path.stat().st_size / 1024**2
                results.append(row)
                if args.out:  # after every row, so an interrupted run keeps what it measured
                    args.out.write_text(json.dumps(results, indent=1))
                print(f"{size:>9} {mode:>12}  load {row['load_s_median']:7.3f} s "
                      f"(min {row['load_s_min']:.3f}, max {row['load_s_max']:.3f})  "
                      f"cpu {row['cpu_s_median']:7.3f} s  peak {row['peak_mb_max']:6.0f} MB",
                      flush=True)
    print("load average:", os.getloadavg())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
