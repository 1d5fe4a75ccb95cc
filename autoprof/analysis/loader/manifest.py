"""Reading run manifests tolerantly: core keys required, the rest defaulted.

A manifest with a ``schema_version`` above ``SCHEMA_VERSION`` was written by a newer autoprof
and is refused (its meaning may have changed); older manifests load with defaults for every
key they lack.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import msgspec

from autoprof import runfolder
from autoprof.analysis.loader.errors import TraceError

SCHEMA_VERSION = runfolder.SCHEMA_VERSION
MANIFEST_NAME = runfolder.MANIFEST
MAX_MANIFEST_BYTES = runfolder.MAX_MANIFEST_BYTES
REQUIRED_KEYS = ("schema_version", "name")
DEFAULTS: dict[str, Any] = {
    "status": "complete",
    "qualname": None,
    "source_file": None,
    "source_line": None,
    "options": {},
    "versions": {},
    "host": None,
    "pid": None,
    "rank": None,
    "world_size": 1,
    "device": None,
    "started_at": None,
    "ended_at": None,
    "warmup_call_ms": [],
    "wait_call_ms": [],
    "steps_recorded": None,
    "files": None,
    "error": None,
    "ranks": None,
}
STATUSES = runfolder.STATUSES


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest at ``path`` with defaults filled in; raises TraceError when unusable."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block open() for ever
            raise TraceError(path, "manifest is not a regular file (a FIFO, socket or device)")
        size = info.st_size
        if size > MAX_MANIFEST_BYTES:
            raise TraceError(path, f"manifest is {size} bytes, too large to be a manifest")
        data = path.read_bytes()
    except OSError as exc:
        raise TraceError(path, f"cannot read manifest: {exc.strerror or exc}") from None
    if not data.strip():
        raise TraceError(path, "empty manifest (the run was interrupted before it was written?)")
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceError(path, f"manifest is not valid JSON ({exc})") from None
    except RecursionError:
        raise TraceError(path, "manifest JSON nested too deeply") from None
    if not isinstance(raw, dict):
        raise TraceError(path, f"manifest is a JSON {type(raw).__name__}, not an object")
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise TraceError(path, f"manifest lacks required keys {missing} (keys found: "
                               f"{sorted(raw)[:10]})")
    version = raw["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceError(path, f"manifest schema_version {version!r} is not a positive integer")
    if version > SCHEMA_VERSION:
        raise TraceError(
            path,
            f"manifest schema_version {version} is newer than this autoprof reads "
            f"({SCHEMA_VERSION}); upgrade autoprof to open this run",
        )
    manifest = {**DEFAULTS, **raw}
    if manifest["status"] not in STATUSES:
        raise TraceError(path, f"manifest status {manifest['status']!r} is not one of {STATUSES}")
    files = manifest["files"]
    if files is not None and not (isinstance(files, list) and all(isinstance(f, str)
                                                                  for f in files)):
        raise TraceError(path, "manifest 'files' is not a list of file names")
    return manifest
