"""Helpers that write run folders the way autoprof's core does (docs/architecture.md)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from support.loader_paths import MATMUL


def write_trace(path: Path, case: str = "n64_cold", rank: int | None = None) -> Path:
    """A copy of an H200 trace (gzipped if the name ends in .gz), optionally with
    distributedInfo set to ``rank``."""
    source = MATMUL / case / "trace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    if rank is not None:
        raw = json.loads(data)
        raw["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        data = json.dumps(raw).encode()
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def manifest(name: str = "step", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": 1, "status": "complete", "name": name, "qualname": name,
        "source_file": "train.py", "source_line": 10, "options": {}, "versions": {},
        "host": "gpuhost", "pid": 4242, "rank": 0, "world_size": 1, "device": None,
        "started_at": "2026-11-30T08:00:00.000+00:00",
        "ended_at": "2026-11-30T08:00:05.000+00:00", "warmup_call_ms": [1.0],
        "steps_recorded": 3, "files": [], "error": None,
    }
    base.update(overrides)
    return base


def write_run(
    root: Path, run_id: str = "20261130-080000-abcdef", name: str = "step",
    traces: tuple[str, ...] = ("gpuhost_4242.1.pt.trace.json.gz",), **overrides: Any,
) -> Path:
    run_dir = root / name / run_id
    run_dir.mkdir(parents=True)
    for trace in traces:
        write_trace(run_dir / trace)
    files = overrides.pop("files", list(traces))
    (run_dir / "manifest.json").write_text(json.dumps(manifest(name, files=files, **overrides)))
    return run_dir


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target
