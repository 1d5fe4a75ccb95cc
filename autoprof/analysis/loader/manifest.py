"""Reading run manifests for the analysis: the file checks a loader needs (a regular file,
not too large, not empty, JSON), then ``autoprof.runfolder.Manifest.from_json``, whose one
rule per field decides the rest (core keys required, the others defaulted; a
``schema_version`` above ``SCHEMA_VERSION`` is refused). Every problem is a TraceError naming
the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from autoprof import runfolder
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.remote import RemoteFile
from autoprof.runfolder import Manifest, ManifestError, confine

SCHEMA_VERSION = runfolder.SCHEMA_VERSION
MANIFEST_NAME = runfolder.MANIFEST
MAX_MANIFEST_BYTES = runfolder.MAX_MANIFEST_BYTES
STATUSES = runfolder.STATUSES


def read_record(path: Path) -> Manifest:
    """The typed record at ``path`` (``autoprof.runfolder.Manifest``, defaults filled in);
    raises TraceError naming the file (and the problem) when unusable."""
    try:  # inside its run folder, a regular file, small (runfolder.confine)
        data = confine.read_regular(path, MAX_MANIFEST_BYTES, folder=path.parent)
    except confine.ReadRefused as refused:
        raise TraceError(path, f"manifest {refused.problem}") from None
    except OSError as exc:
        raise TraceError(path, f"cannot read manifest: {exc.strerror or exc}") from None
    return record_from_bytes(path, data)


def record_from_bytes(path: Path | RemoteFile, data: bytes) -> Manifest:
    """The typed record in a manifest's bytes (read from ``path``: a file or a URL); raises
    TraceError naming it when unusable."""
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
    try:
        return Manifest.from_json(raw, path if isinstance(path, Path) else str(path))
    except ManifestError as exc:
        raise TraceError(path, exc.problem) from None


def read_manifest(path: Path) -> dict[str, Any]:
    """The record at ``path`` as plain JSON values (the dict view the analysis reads);
    raises TraceError when unusable."""
    return read_record(path).to_dict()
