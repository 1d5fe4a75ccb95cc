"""Run folders on disk: run ids, atomic writes, the manifest. No torch import at module level.

A reader never sees half a file: everything is written under a hidden temporary name
(``.<name>.<pid>.tmp``) in the same folder, flushed, then renamed into place.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

SCHEMA_VERSION = 1
Status = Literal["recording", "complete", "failed", "partial"]
MANIFEST = "manifest.json"


def new_run_id(now: _dt.datetime | None = None) -> str:
    """``YYYYmmdd-HHMMSS-<6 hex>``: sortable by time, random suffix so processes never clash."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return f"{now:%Y%m%d-%H%M%S}-{os.urandom(3).hex()}"


def utc_now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def temp_name(path: Path) -> Path:
    """The hidden temporary sibling ``path`` is written to before the rename."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, default=str) + "\n").encode())


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def create_run_dir(out_dir: Path, name: str, run_id: str, exist_ok: bool = False) -> Path:
    """Make ``<out_dir>/<name>/<run_id>``; with ``exist_ok=False`` a clash raises
    FileExistsError so the caller picks another id (two processes never share a folder)."""
    run_dir = out_dir / safe_component(name) / run_id
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(exist_ok=exist_ok)
    return run_dir


def safe_component(name: str) -> str:
    """A function name as one folder name: path separators and odd characters become ``_``."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).strip(".")
    return cleaned or "unnamed"


def versions() -> dict[str, str | None]:
    from autoprof._version import __version__

    torch = sys.modules.get("torch")
    return {
        "autoprof": __version__,
        "torch": getattr(torch, "__version__", None),
        "python": platform.python_version(),
    }


def device_info(uses_cuda: bool) -> dict[str, Any] | None:
    """Name and properties of the current CUDA device, or None on CPU."""
    if not uses_cuda:
        return None
    import torch

    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    keep = ("name", "major", "minor", "total_memory", "multi_processor_count", "L2_cache_size")
    properties = {k: getattr(props, k) for k in keep if hasattr(props, k)}
    return {"name": torch.cuda.get_device_name(index), "index": index, "properties": properties}


def build_manifest(
    *,
    status: Status,
    identity: dict[str, Any],
    options: dict[str, Any],
    started_at: str,
    ended_at: str | None,
    warmup_call_ms: Iterable[float],
    wait_call_ms: Iterable[float] = (),
    steps_recorded: int,
    files: Iterable[str],
    error: dict[str, str] | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest dict of docs/architecture.md. ``identity`` holds name, qualname,
    source_file, source_line, host, pid, rank, world_size, device, run_id.
    ``warmup_call_ms``: the untraced warm-up calls; ``wait_call_ms``: the profiler steps
    before the first recorded one (``skip_first`` and the first cycle's ``wait``), both timed
    the same way (wall clock, device synchronized when CUDA is in use)."""
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": status,
        **identity,
        "options": options,
        "versions": versions(),
        "started_at": started_at,
        "ended_at": ended_at,
        "warmup_call_ms": [round(float(v), 6) for v in warmup_call_ms],
        "wait_call_ms": [round(float(v), 6) for v in wait_call_ms],
        "steps_recorded": int(steps_recorded),
        "files": sorted(set(files)),
        "error": error,
    }
    if extra:
        manifest.update(extra)
    return manifest


def host_identity() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}
