"""Two first-open comparisons at 1M events, side by side in fresh processes: what reading
``[memory]`` events costs (``--compare memory-events``, the default; limit: +20%), and the
streamed read against the checkout before it (``--compare streaming``).

**Streaming** (``--compare streaming``): the synthetic 1M-event, 5-step trace of
``benchmarks/traces.py`` (the first-open target's), plain and gzipped. ``after`` is this
checkout; ``before`` is the package as it was at ``--before`` (default: the commit before
the streamed read, found from the history of ``loader/chunks.py``), extracted with ``git
archive``. Both run with ``AUTOPROF_CACHE=0`` (a first open, no cache read or written),
alternating (ABAB) per file; each process reports the wall and CPU time (``process_time``:
what other work on a shared machine disturbs least) of ``load()`` and of load + ``summary()``
(the first open), and its own peak RSS (``VmHWM``) after the load and after the summary.

    .venv/bin/python benchmarks/memory_load.py --compare streaming [--pairs 3] [--out F.json]
        [--overlay autoprof/analysis/loader,autoprof/analysis/metrics/efficiency.py]

``--overlay`` makes ``after`` the ``before`` tree with only those paths taken from HEAD, so
other work that landed in between (or uncommitted edits in this checkout) stays out of the
ratio.

**Memory events** (``--compare memory-events``):

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
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

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
    added: list[dict[str, Any]] = []
    held = 0
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
    loose = target / "autoprof/analysis/loader/loose_events.py"
    coerce = loose.read_text()
    for line in ("        **{f: float_or_nan(raw_args.get(k)) "
                 "for f, k in _MEMORY_ARGS.items()},\n",
                 '        device_id=int(ident(raw_args.get("Device Id"))),\n',
                 '        device_type=int(ident(raw_args.get("Device Type"))),\n'):
        coerce = coerce.replace(line, "")
    loose.write_text(coerce)
    return target


_STREAM_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy, pandas  # imported before the clock, as every benchmark here does
from autoprof.analysis.run import load

def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")

c0, t0 = time.process_time(), time.perf_counter()
run = load(sys.argv[2])
c1, t1 = time.process_time(), time.perf_counter()
load_peak = peak_mb()
run.summary()
c2, t2 = time.process_time(), time.perf_counter()
print(json.dumps({"load_s": t1 - t0, "summary_s": t2 - t1, "first_open_s": t2 - t0,
                  "load_cpu_s": c1 - c0, "first_open_cpu_s": c2 - c0,
                  "load_peak_mb": load_peak, "peak_mb": peak_mb(), "events": len(run.events)}))
"""
_STREAM_KEYS = ("load_s", "first_open_s", "load_cpu_s", "first_open_cpu_s", "load_peak_mb",
                "peak_mb")


def _extract(rev: str, paths: list[str], target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, *paths], cwd=REPO,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)


def overlaid(rev: str, overlay: list[str], target: Path) -> Path:
    """The package at ``rev`` with ``overlay`` (paths) as they are at HEAD: "after" with only
    those files changed, when other work landed in between."""
    _extract(rev, ["autoprof"], target)
    _extract("HEAD", overlay, target)
    return target


def before_streaming(rev: str | None, target: Path) -> tuple[str, Path]:
    """The package at ``rev`` (default: the commit before the streamed read) under target."""
    if rev is None:
        added: list[str] = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--",
             "autoprof/analysis/loader/chunks.py"],
            cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
        if not added:
            raise SystemExit("no commit adds autoprof/analysis/loader/chunks.py: pass --before")
        rev = added[-1] + "~1"
    _extract(rev, ["autoprof"], target)
    return rev, target


def gzipped(trace: Path) -> Path:
    """A gzip copy of ``trace`` in a folder of its own (written once)."""
    path = trace.parent.with_name(trace.parent.name + "-gz") / (trace.name + ".gz")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with trace.open("rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1024**2)
        tmp.replace(path)
    return path


def _stream_sample(package_root: Path, trace: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _STREAM_CHILD, str(package_root), str(trace)],
                         capture_output=True, text=True, env={**os.environ, "AUTOPROF_CACHE": "0"})
    if out.returncode:
        raise SystemExit(f"{package_root}: the load failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def compare_streaming(args: argparse.Namespace) -> dict[str, Any]:
    """Before vs after the streamed read on the plain and the gzipped trace (module doc)."""
    plain = ensure_trace(args.work, 1_000_000, steps=5)
    report: dict[str, Any] = {"files": {}, "load_avg_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        rev, base = before_streaming(args.before, Path(tmp) / "before")
        after_root = REPO
        if args.overlay:
            after_root = overlaid(rev, args.overlay.split(","), Path(tmp) / "after")
        report.update(before=rev, after="this checkout" if after_root == REPO else
                      f"{rev} with {args.overlay} from HEAD")
        for label, trace in (("plain", plain), ("gz", gzipped(plain))):
            raw: dict[str, list[dict[str, float]]] = {"after": [], "before": []}
            for _ in range(args.pairs):
                raw["after"].append(_stream_sample(after_root, trace))
                raw["before"].append(_stream_sample(base, trace))
            cells = {}
            for key in _STREAM_KEYS:
                after = statistics.median(r[key] for r in raw["after"])
                before = statistics.median(r[key] for r in raw["before"])
                cells[key] = {"after": after, "before": before, "ratio": after / before,
                              "after_range": [min(r[key] for r in raw["after"]),
                                              max(r[key] for r in raw["after"])],
                              "before_range": [min(r[key] for r in raw["before"]),
                                               max(r[key] for r in raw["before"])]}
            report["files"][label] = {"trace": str(trace), "bytes": trace.stat().st_size,
                                      "events": raw["after"][0]["events"], "cells": cells,
                                      "raw": raw}
            print(f"{label}: " + json.dumps(cells), flush=True)
    report["load_avg_end"] = os.getloadavg()
    return report


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
    parser.add_argument("--compare", choices=("memory-events", "streaming"),
                        default="memory-events")
    parser.add_argument("--before", default=None, help="streaming: the revision to compare")
    parser.add_argument("--overlay", default=None,
                        help="streaming: 'after' is --before with these paths (comma-separated)"
                             " from HEAD, instead of this checkout")
    args = parser.parse_args()
    if args.compare == "streaming":
        report = compare_streaming(args)
        if args.out:
            args.out.write_text(json.dumps(report, indent=2) + "\n")
        return 0
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
