"""``whatif.json`` in the run folder: written atomically, then listed in the manifest.

The one home of the file's name and schema version: the writer (``autoprof.record.whatif``,
which may run where the analysis cannot be imported: a GPU box with torch only) and the
reader (``autoprof.analysis.loader.whatif``) both import them from here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from autoprof.runfolder.files import MANIFEST, MAX_MANIFEST_BYTES, atomic_write_json, folder_lock
from autoprof.runfolder.manifest import ManifestError, read_manifest, write_manifest

WHATIF_NAME = "whatif.json"
WHATIF_SCHEMA_VERSION = 1
MAX_WHATIF_BYTES = 16 * 1024**2


def whatif_record(results: list[dict[str, Any]], **about: Any) -> dict[str, Any]:
    """The file's content: ``schema_version``, what was tried on what (``about``), results;
    a non-finite number (a NaN where the original had none: infinite error) is written null,
    so the file is strict JSON."""
    record: dict[str, Any] = _finite(
        {"schema_version": WHATIF_SCHEMA_VERSION, **about, "results": results})
    return record


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_whatif(run_dir: Path, record: dict[str, Any]) -> Path:
    """Write ``run_dir/whatif.json`` atomically and add it to the manifest's ``files``,
    holding the folder's lock (a finisher rewriting the manifest at the same time would
    otherwise drop the entry)."""
    path = run_dir / WHATIF_NAME
    with folder_lock(run_dir):
        atomic_write_json(path, record)
        _list_in_manifest(run_dir)
    return path


def _list_in_manifest(run_dir: Path) -> None:
    manifest_path = run_dir / MANIFEST
    try:
        manifest = read_manifest(manifest_path, MAX_MANIFEST_BYTES)  # a FIFO: refused
    except (OSError, ManifestError):
        return  # no readable manifest (a plain trace folder): the file alone is the record
    files = manifest.files or ()
    if WHATIF_NAME in files:
        return
    write_manifest(manifest_path, manifest.replace(files=tuple(sorted({*files, WHATIF_NAME}))))
