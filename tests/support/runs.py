"""Helpers that write run folders the way autoprof's core does (docs/architecture.md)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from support.loader_paths import MATMUL
from support.manifests import manifest, write_manifest

__all__ = ["copy_tree", "manifest", "write_run", "write_trace"]


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


def write_run(
    root: Path, run_id: str = "20261130-080000-abcdef", name: str = "step",
    traces: tuple[str, ...] = ("gpuhost_4242.1.pt.trace.json.gz",), **overrides: Any,
) -> Path:
    run_dir = root / name / run_id
    run_dir.mkdir(parents=True)
    for trace in traces:
        write_trace(run_dir / trace)
    files = overrides.pop("files", list(traces))
    write_manifest(run_dir, name, files=files, **overrides)
    return run_dir


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target
