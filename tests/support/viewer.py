"""Builders for viewer test traces folders: real H200 traces in run folders, bad and odd runs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from support import manifests

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "h200"
APP = str(REPO / "viewer" / "app.py")
EVIL = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")
EVIL_RUN_NAME = "<script>alert(2)</script>"
EVIL_FOLDER = "<img src=x onerror=alert(3)>"  # a run folder named like HTML (a failed run)
ALL_PAGES = ("overview", "ops", "timeline", "steps", "compare", "ranks")


def _h200(case: str) -> dict[str, Any]:
    return json.loads((H200 / "matmul_add" / case / "trace.json").read_text())


VIEWER_RUN: dict[str, Any] = {  # what the viewer's runs differ in from support.manifests.BASE
    "source_file": "bench.py", "source_line": 1,
    "versions": {"autoprof": "0.1.0", "torch": "2.11.0", "python": "3.12"},
    "host": "h200", "pid": 457,
    "device": {"name": "NVIDIA H200", "properties": {"numSms": 132}},
    "started_at": "2026-11-30T07:00:00Z", "ended_at": "2026-11-30T07:00:02Z",
    "warmup_call_ms": [912.5, 0.31, 0.05, 0.04],
}


def manifest(name: str, files: list[str], **over: Any) -> dict[str, Any]:
    return manifests.manifest(name, **{**VIEWER_RUN, "files": files, **over})


def write_run(root: Path, name: str, run_id: str, traces: dict[str, dict[str, Any]],
              **manifest_over: Any) -> Path:
    """<root>/<name>/<run_id>/ with gzipped traces (worker -> trace dict) and manifest.json."""
    folder = root / name / run_id
    folder.mkdir(parents=True)
    files = []
    for i, (worker, trace) in enumerate(traces.items()):
        fname = f"{worker}.{1790857026000000000 + i}.pt.trace.json.gz"
        with gzip.open(folder / fname, "wt") as f:
            json.dump(trace, f)
        files.append(fname)
    manifests.write_manifest(folder, manifest_over.pop("manifest_name", name),
                             **{**VIEWER_RUN, "files": files, **manifest_over})
    return folder


def evil_trace() -> dict[str, Any]:
    """The 64x64 H200 trace with op, annotation and kernel names that are HTML/Markdown."""
    t = _h200("n64_cold")
    rename = {"aten::mm": EVIL[0], "aten::add": EVIL[1], "matmul_add": "**bold** :red[x] $x$"}
    for ev in t["traceEvents"]:
        if ev.get("name") in rename:
            ev["name"] = rename[ev["name"]]
        elif ev.get("cat") == "kernel" and "nvjet" in str(ev.get("name")):
            ev["name"] = EVIL[0] + " kernel"
    return t


def ddp_trace(rank: int, compute_us: float, world: int = 2) -> dict[str, Any]:
    """A small hand-built data-parallel trace: per 1 ms step, `compute_us` of aten::mm (and
    its kernel), then an all-reduce that lasts until the step ends (the wait for the others).
    """
    pid, tid, ev = 1000 + rank, 1000 + rank, []
    corr = 0
    for step in range(3):
        t = 1_000_000.0 + step * 1000.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 2}",
                   "pid": pid, "tid": tid, "ts": t, "dur": 990.0, "args": {}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": tid,
                   "ts": t + 5, "dur": compute_us - 10, "args": {"Input Dims": [[512, 512]]}})
        for name, start, dur, kernel in (("aten::mm", t + 10, compute_us - 30, "gemm_kernel"),
                                         ("nccl:all_reduce", t + compute_us + 10,
                                          975 - compute_us - 20, "ncclDevKernel_AllReduce")):
            corr += 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": pid, "tid": tid, "ts": start, "dur": 4.0,
                       "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                       "ts": start + 6, "dur": dur,
                       "args": {"correlation": corr, "device": 0, "stream": 7}})
            if name.startswith("nccl"):
                ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": tid,
                           "ts": start - 2, "dur": 8.0, "args": {}})
    return {"schemaVersion": 1, "traceEvents": ev,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world}}


N64 = "matmul_add/20261130-070000-000064"
N4096 = "matmul_add/20261130-070100-004096"


def add_h200(root: Path) -> None:
    """Two runs of one function, as autoprof lays them out: 64x64 and 4096x4096."""
    write_run(root, "matmul_add", "20261130-070000-000064", {"h200_457": _h200("n64_cold")})
    write_run(root, "matmul_add", "20261130-070100-004096", {"h200_458": _h200("n4096_cold")})


def add_sweep(root: Path) -> None:
    """The H200 size sweep (64 to 8192) as recorded: plain torch.profiler traces, one folder
    per size (sweep/n64/trace.json, ...), no manifests."""
    for case in (H200 / "sweep").glob("n*"):
        (root / "sweep" / case.name).mkdir(parents=True)
        (root / "sweep" / case.name / "trace.json").write_bytes((case / "trace.json").read_bytes())


def add_evil(root: Path) -> None:
    """The evil trace, and a failed run whose folder, name and error are HTML too."""
    write_run(root, "evil", "20261130-070200-0000e1", {"h200_459": evil_trace()},
              manifest_name=EVIL_RUN_NAME)
    write_run(root, EVIL_FOLDER, "20261130-070210-0000e2", {},
              manifest_name=EVIL[1], status="failed", steps_recorded=0,
              error={"type": "<b>RuntimeError</b>", "message": EVIL[0], "phase": "active"})


def add_failed(root: Path) -> None:
    write_run(root, "boom", "20261130-070300-0000f1", {}, status="failed", steps_recorded=0,
              error={"type": "RuntimeError", "message": "CUDA out of memory", "phase": "active"})


def add_multirank(root: Path) -> None:
    folder = write_run(root, "ddp_step", "20261130-070400-0000d2",
                       {"rank0": ddp_trace(0, compute_us=200.0),
                        "rank1": ddp_trace(1, compute_us=850.0)},
                       world_size=2, ranks=[0, 1])
    m = json.loads((folder / "manifest.json").read_text())
    manifests.write_manifest(folder, "ddp_step", file="rank1.manifest.json",
                             **{**VIEWER_RUN, "world_size": 2, "rank": 1, "pid": 460,
                                "files": [m["files"][1]]})


def add_cpu(root: Path) -> None:
    """A real CPU run recorded by autoprof itself (warm-up, schedule, export)."""
    import torch

    from autoprof import autoprof

    @autoprof(out_dir=str(root), warmup=2, name="cpu_matmul")
    def cpu_matmul(x: torch.Tensor) -> torch.Tensor:
        return (x @ x + x).sum()

    x = torch.randn(128, 128)
    for _ in range(2 + 5):  # warm-up calls, then wait + warmup + 3 active steps
        cpu_matmul(x)
    autoprof.flush()
