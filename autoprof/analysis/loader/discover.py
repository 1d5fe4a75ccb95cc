"""``find_runs(root)``: every run folder and loose trace under a traces root, newest first.

Only reads manifests (never traces), so listing hundreds of runs is instant. Folders and
files that resolve outside ``root`` (symlinks) are skipped, never followed.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import zlib
from pathlib import Path
from typing import Any

import pandas as pd

from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.inputs import inside, may_be_trace_name
from autoprof.analysis.loader.manifest import MANIFEST_NAME, read_record

MAX_DEPTH = 5
_SNIFF_BYTES = 64 * 1024
_TRACE_KEYS = (b'"traceEvents"', b'"schemaVersion"')
_TORCH_NAMES = (".pt.trace.json", ".pt.trace.json.gz")
FIND_COLUMNS = (
    "path", "kind", "name", "run_id", "started_at", "status", "world_size", "verdict", "error",
)


def _iso_mtime(path: Path) -> str | None:
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    return dt.datetime.fromtimestamp(stamp, tz=dt.timezone.utc).isoformat(timespec="seconds")


def _run_row(run_dir: Path) -> dict[str, Any]:
    row: dict[str, Any] = {
        "path": str(run_dir), "kind": "run", "name": run_dir.parent.name, "run_id": run_dir.name,
        "started_at": None, "status": None, "world_size": None, "verdict": None, "error": None,
    }
    try:
        record = read_record(_regular(run_dir / MANIFEST_NAME))
    except TraceError as exc:
        row["error"] = str(exc)
        row["started_at"] = _iso_mtime(run_dir / MANIFEST_NAME)
        return row
    row["name"] = record.name or row["name"]
    row["started_at"] = record.started_at or _iso_mtime(run_dir / MANIFEST_NAME)
    row["status"] = record.status
    row["world_size"] = record.world_size
    error = record.error
    if error is not None:
        row["error"] = f"{error.get('type', 'Error')}: {error.get('message', '')}".strip()
    return row


def _regular(path: Path) -> Path:
    """``path``, or TraceError when it is not a regular file (checked before any open(): a
    FIFO would block the listing, and with it every viewer client)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise TraceError(path, "not a regular file (a FIFO, socket or device)")
    return path


def _trace_row(trace: Path) -> dict[str, Any]:
    return {
        "path": str(trace), "kind": "trace", "name": trace.name.split(".")[0],
        "run_id": None, "started_at": _iso_mtime(trace), "status": None, "world_size": None,
        "verdict": None, "error": None,
    }


def looks_like_trace(path: Path) -> bool:
    """Whether a loose ``.json``/``.json.gz`` file is a torch trace, by its first bytes: the
    JSON Object Format names ``traceEvents`` (Kineto writes ``schemaVersion`` first) near the
    start, the JSON Array Format starts with ``[``. A results file or any other stray JSON is
    not a run. Special files are never opened (a FIFO would block); a file named as torch
    names its traces (``*.pt.trace.json``) or one that cannot be read is listed, so that
    loading it shows what is wrong with it."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        if path.name.lower().endswith(_TORCH_NAMES):
            return True
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
        if head[:2] == b"\x1f\x8b":
            head = zlib.decompressobj(wbits=31).decompress(head, _SNIFF_BYTES)
    except (OSError, zlib.error):
        return True
    return head.lstrip().startswith(b"[") or any(key in head for key in _TRACE_KEYS)


def discover(root: Path) -> pd.DataFrame:
    if not root.is_dir():
        raise TraceError(root, "not a folder (find_runs needs the traces root folder)")
    rows: list[dict[str, Any]] = []
    base_depth = len(root.parts)
    for current, dirs, files in os.walk(root, followlinks=False):
        here = Path(current)
        if not inside(here, root):
            dirs[:] = []
            continue
        if MANIFEST_NAME in files:
            rows.append(_run_row(here))
            dirs[:] = []
            continue
        for name in sorted(files):
            trace = here / name
            if may_be_trace_name(name) and inside(trace, root) and looks_like_trace(trace):
                rows.append(_trace_row(trace))
        if len(here.parts) - base_depth >= MAX_DEPTH:
            dirs[:] = []
        dirs.sort()
    frame = pd.DataFrame(rows, columns=list(FIND_COLUMNS))
    if len(frame):
        order = frame["started_at"].fillna("").astype(str)
        frame = frame.assign(_order=order).sort_values(
            ["_order", "path"], ascending=[False, True]
        ).drop(columns="_order").reset_index(drop=True)
    return frame
