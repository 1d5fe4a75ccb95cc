"""On a GPU: does autoprof keep its own calls out of the measured steps, and does the thread
model hold with CUDA and CUPTI in the process?

Run on a CUDA machine from the repository root::

    PYTHONPATH=. python benchmarks/gpu/collect_cases.py --out OUT_DIR

Cases (run folders under ``OUT_DIR/runs/``), results in ``OUT_DIR/collect_cases.json``:

- ``seed``: ``x @ w + b`` in bf16 at 4096 (``--size``), ``@autoprof`` defaults (3 untraced
  calls, then wait=1 warmup=1 active=3). ``profiled_event_us``: CUDA-event time of each of
  the 5 profiled calls (events around the decorated call); ``steps``: for each
  ``ProfilerStep#N`` in the trace its CPU span and the ``cudaDeviceSynchronize`` /
  ``cudaStreamSynchronize`` calls inside it that are not under an ``autoprof::`` label
  (``own_syncs_in_step``: must be 0 in every step) and those under one. The last step's
  span must not stand out from the others (before the fix, autoprof's end-of-run sync
  doubled it and was the top op by self CPU).
- ``seed_sync``: the same with ``sync=True``: one ``autoprof::sync`` per recorded step.
- ``owner_thread_ends``: a child process where a worker thread makes 3 of the 5 profiled
  calls and ends (``returncode`` must be 0: it was a segfault) and the run is ``partial``.
- ``daemon_owner_at_exit``: a child process that exits while a daemon thread owns a
  recording profiler (``returncode`` 0, run ``partial``).
- ``compile_outside``: ``torch.compile(autoprof(f))`` with the default (inductor) backend:
  ``unique_graphs`` (1 expected), ``returncode``, run status, and stderr lines that mention
  autoprof's code (none expected).

Only torch and this repository are needed. ``--size 256 --dtype float32`` tries it on a CPU.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import torch

import autoprof
from autoprof import autoprof as profile_fn

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
SYNC_NAMES = ("cudaDeviceSynchronize", "cudaStreamSynchronize")
REPO = Path(__file__).resolve().parents[2]


def _events(run_dir: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for trace in sorted(run_dir.glob("*.pt.trace.json.gz")):
        with gzip.open(trace, "rt") as fh:
            events += [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    return events


def _inside(e: dict[str, Any], span: dict[str, Any]) -> bool:
    return bool(span["ts"] <= e["ts"] and e["ts"] + e.get("dur", 0) <= span["ts"] + span["dur"])


def step_report(run_dir: Path) -> list[dict[str, Any]]:
    """Per ProfilerStep: CPU span, and the syncs inside it outside/inside autoprof:: labels."""
    events = _events(run_dir)
    steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    ours = [e for e in events if e["name"].startswith("autoprof::")]
    syncs = [e for e in events if e["name"] in SYNC_NAMES]
    out = []
    for step in steps:
        inside = [s for s in syncs if _inside(s, step)]
        labelled = [s for s in inside if any(_inside(s, o) for o in ours)]
        out.append({
            "name": step["name"],
            "cpu_span_us": step["dur"],
            "own_syncs_in_step": len(inside) - len(labelled),
            "syncs_under_autoprof_label": len(labelled),
            "sync_us_in_step": sum(s["dur"] for s in inside),
        })
    return out


def seed_case(out: Path, size: int, dtype: torch.dtype, **options: Any) -> dict[str, Any]:
    name = "seed_sync" if options.get("sync") else "seed"
    x, w, b = (torch.randn(size, size, device=DEVICE, dtype=dtype) for _ in range(3))

    @profile_fn(name=name, out_dir=str(out / "runs"), **options)
    def seed(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x @ w + b

    for _ in range(3):  # the untraced calls
        seed(x, w, b)
    event_us = []
    for _ in range(5):  # wait, warmup, 3 active
        if CUDA:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            seed(x, w, b)
            end.record()
            torch.cuda.synchronize()
            event_us.append(start.elapsed_time(end) * 1e3)
        else:
            seed(x, w, b)
    autoprof.flush()
    run_dir = seed.autoprof_session.run_dir  # type: ignore[attr-defined]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return {"run_dir": str(run_dir), "status": manifest["status"],
            "profiled_event_us": event_us, "steps": step_report(run_dir)}


OWNER_ENDS = """
    import threading, torch
    from autoprof import autoprof
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    @autoprof(name="owner_thread_ends", out_dir=OUT, warmup_calls=0)
    def f(x):
        return x @ x
    def worker():
        for _ in range(3):
            f(torch.ones(512, 512, device=dev))
    t = threading.Thread(target=worker); t.start(); t.join()
    f(torch.ones(512, 512, device=dev))
"""

DAEMON_OWNER = """
    import threading, time, torch
    from autoprof import autoprof
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    @autoprof(name="daemon_owner_at_exit", out_dir=OUT, warmup_calls=0)
    def f(x):
        return x @ x
    ready = threading.Event()
    def worker():
        for _ in range(3):
            f(torch.ones(512, 512, device=dev))
        ready.set(); time.sleep(600)
    threading.Thread(target=worker, daemon=True).start(); ready.wait()
"""

COMPILE_OUTSIDE = """
    import json, torch
    from autoprof import autoprof
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    def f(x):
        return torch.relu(x @ x) * 2 + 1
    g = torch.compile(autoprof(name="compile_outside", out_dir=OUT, warmup_calls=3)(f))
    x = torch.randn(1024, 1024, device=dev)
    for _ in range(8):
        g(x)
    from torch._dynamo.utils import counters
    print("STATS", json.dumps(dict(counters["stats"])))
"""


def child_case(out: Path, name: str, source: str) -> dict[str, Any]:
    program = f"OUT = {str(out / 'runs')!r}\n" + textwrap.dedent(source)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=600, env=env)
    runs = sorted((out / "runs" / name).glob("*/manifest.json"))
    result: dict[str, Any] = {
        "returncode": done.returncode,
        "status": json.loads(runs[-1].read_text())["status"] if runs else None,
        "stderr_tail": done.stderr[-2000:],
        "stderr_lines_naming_autoprof_code": [
            line for line in done.stderr.splitlines() if "autoprof/_" in line],
    }
    if "STATS" in done.stdout:
        result["unique_graphs"] = json.loads(done.stdout.split("STATS", 1)[1])["unique_graphs"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--dtype", choices=["bf16", "float32"], default="bf16")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    results = {
        "device": torch.cuda.get_device_name() if CUDA else "cpu",
        "torch": torch.__version__,
        "seed": seed_case(args.out, args.size, dtype),
        "seed_sync": seed_case(args.out, args.size, dtype, sync=True),
        "owner_thread_ends": child_case(args.out, "owner_thread_ends", OWNER_ENDS),
        "daemon_owner_at_exit": child_case(args.out, "daemon_owner_at_exit", DAEMON_OWNER),
        "compile_outside": child_case(args.out, "compile_outside", COMPILE_OUTSIDE),
    }
    (args.out / "collect_cases.json").write_text(json.dumps(results, indent=2))
    print(json.dumps({k: v if k in ("device", "torch") else {
        kk: vv for kk, vv in v.items() if kk not in ("stderr_tail", "steps")}
        for k, v in results.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
