"""``whatif.json`` in the run folder: written atomically, then listed in the manifest."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from autoprof.runfolder import MANIFEST, atomic_write_json

# The reader (autoprof.analysis.loader.whatif) keeps the same two constants: the writer must
# run where the analysis cannot be imported (a GPU box with torch only).
WHATIF_NAME = "whatif.json"
WHATIF_SCHEMA_VERSION = 1


def whatif_record(results: list[dict[str, Any]], **about: Any) -> dict[str, Any]:
    """The file's content: ``schema_version``, what was tried on what (``about``), results;
    a non-finite number (a NaN where the original had none: infinite error) is written null,
    so the file is strict JSON."""
    return _finite({"schema_version": WHATIF_SCHEMA_VERSION, **about, "results": results})


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_whatif(run_dir: Path, record: dict[str, Any]) -> Path:
    """Write ``run_dir/whatif.json`` atomically and add it to the manifest's ``files``."""
    path = run_dir / WHATIF_NAME
    atomic_write_json(path, record)
    _list_in_manifest(run_dir)
    return path


def _list_in_manifest(run_dir: Path) -> None:
    manifest_path = run_dir / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except (OSError, ValueError):
        return  # no readable manifest (a plain trace folder): the file alone is the record
    if not isinstance(manifest, dict):
        return
    files = manifest.get("files")
    files = list(files) if isinstance(files, list) else []
    if WHATIF_NAME in files:
        return
    manifest["files"] = sorted({*files, WHATIF_NAME})
    atomic_write_json(manifest_path, manifest)
