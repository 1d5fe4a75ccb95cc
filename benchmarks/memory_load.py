"""What reading ``[memory]`` events costs on a first open of a 1M-event trace (limit: +20%).

The trace: the synthetic 800k-event, 5-step trace (benchmarks/traces.py) plus an allocation
and a free inside each of its first 100k ``cpu_op`` events (cuda:0, like a trace recorded
with ``profile_memory=True``), 1M events in all, in Kineto's indented layout.

Both sides open that same file in fresh processes, alternating (ABAB), with no cache on disk
(each writes one, after its clock, the way a first open does; it is removed before the next):
``with memory`` is this checkout; ``without`` is a copy of it whose decoder skips memory
events (the ``[memory]`` fields of ``schema.Args`` and the column builder's hand-off taken
out; every other line the same). Each process times ``load()`` and then ``summary()``: wall
time, and the CPU time of the thread that ran them (``*_cpu_s``: what other work on a shared
machine disturbs least).

    .venv/bin/python benchmarks/memory_load.py [--pairs 3] [--work benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from traces import ensure_trace  # noqa: E402

BASE_EVENTS, MEMORY_OPS = 800_000, 100_000
# the lines of this checkout that read memory events; the baseline copy goes without them
_SCHEMA_FIELDS = ("bytes_delta", "total_allocated", "total_reserved", "addr", "device_id",
                  "device_type")
_HAND_OFF = ('        mem_code = self.names.codes.get(MEMORY_EVENT)\n'
             '        if mem_code is not None:\n')

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from autoprof.analysis.run import load
from autoprof.analysis.loader import cache
c0, t0 = time.thread_time(), time.perf_counter()
run = load(sys.argv[2])
c1, t1 = time.thread_time(), time.perf_counter()
summary = run.summary()
c2, t2 = time.thread_time(), time.perf_counter()
cache.wait_for_writes()
print(json.dumps({"load_s": t1 - t0, "summary_s": t2 - t1, "load_cpu_s": c1 - c0,
                  "summary_cpu_s": c2 - c1, "events": len(run.events),
                  "memory_events": len(getattr(run, "memory_events", ()))}))
"""


def memory_trace(work: Path) -> Path:
    path = work / "memory-n1000000" / "trace.json"
    if path.exists():
        return path
    base = msgspec.json.decode(ensure_trace(work, BASE_EVENTS, steps=5).read_bytes())
    events = base["traceEvents"]
    added, held = [], 0
    for ev in events:
        if len(added) >= 2 * MEMORY_OPS:
            break
        if ev.get("cat") != "cpu_op":
            continue
        size = 512 * (1 + len(added) % 64)
        addr = 139_000_000_000_000 + 4096 * (len(added) // 2)
        for frac, delta in ((0.25, size), (0.75, -size)):
            held += delta
            added.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                          "pid": ev["pid"], "tid": ev["tid"], "ts": ev["ts"] + frac * ev["dur"],
                          "args": {"Total Reserved": 2 * 1024**3, "Total Allocated": held,
                                   "Bytes": delta, "Device Id": 0, "Device Type": 1,
                                   "Addr": addr, "finished": False}})
    base["traceEvents"] = events + added
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.format(msgspec.json.encode(base), indent=1))
    return path


def without_memory(target: Path) -> Path:
    """A copy of this checkout's package whose decoder does not read memory events."""
    shutil.copytree(REPO / "autoprof", target / "autoprof")
    schema = target / "autoprof/analysis/loader/schema.py"
    lines = [ln for ln in schema.read_text().splitlines(keepends=True)
             if not any(ln.lstrip().startswith(f"{f}:") for f in _SCHEMA_FIELDS)]
    schema.write_text("".join(lines))
    columns = target / "autoprof/analysis/loader/columns.py"
    text = columns.read_text()
    if _HAND_OFF not in text:
        raise SystemExit(f"{columns}: the memory hand-off is not where this script expects it")
    columns.write_text(text.replace(_HAND_OFF, "        if False:\n"))
    coerce = columns.read_text()
    for line in ("        **{f: _float_or_nan(raw_args.get(k)) "
                 "for f, k in _MEMORY_ARGS.items()},\n",
                 '        device_id=int(ident(raw_args.get("Device Id"))),\n',
                 '        device_type=int(ident(raw_args.get("Device Type"))),\n'):
        coerce = coerce.replace(line, "")
    columns.write_text(coerce)
    return target


def measure(package_root: Path, trace: Path) -> dict[str, float]:
    for stale in trace.parent.glob("*.autoprof.arrow"):
        stale.unlink()
    out = subprocess.run([sys.executable, "-c", _CHILD, str(package_root), str(trace)],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{package_root}: the load failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=HERE / "out")
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON")
    args = parser.parse_args()
    trace = memory_trace(args.work)
    results: dict[str, list[dict[str, float]]] = {"with": [], "without": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = without_memory(Path(tmp))
        for _ in range(args.pairs):
            results["with"].append(measure(REPO, trace))
            results["without"].append(measure(base, trace))
    for cache in trace.parent.glob("*.autoprof.arrow"):  # the baseline's: no memory table
        cache.unlink()
    summary = {}
    for key in ("load_s", "summary_s", "load_cpu_s", "summary_cpu_s"):
        ours = statistics.median(r[key] for r in results["with"])
        theirs = statistics.median(r[key] for r in results["without"])
        best = min(r[key] for r in results["with"]) / min(r[key] for r in results["without"])
        summary[key] = {"with_memory": ours, "without": theirs, "ratio": ours / theirs,
                        "ratio_of_best": best}
    for key, parts in (("load_plus_summary_s", ("load_s", "summary_s")),
                       ("load_plus_summary_cpu_s", ("load_cpu_s", "summary_cpu_s"))):
        total = {k: statistics.median(sum(r[p] for p in parts) for r in results[k])
                 for k in results}
        summary[key] = {"with_memory": total["with"], "without": total["without"],
                        "ratio": total["with"] / total["without"]}
    report = {"trace": str(trace), "events": results["with"][0]["events"],
              "memory_events": results["with"][0]["memory_events"],
              "load_avg": os.getloadavg(), "summary": summary, "raw": results}
    print(json.dumps(summary, indent=2))
    print(f"memory events: {report['memory_events']}; limit: ratio <= 1.2 on load_s "
          "(load_cpu_s: the loading thread's CPU time, steadier on a shared machine)")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
