"""The one manifest writer for tests: every manifest a test writes goes through
``autoprof.runfolder.Manifest`` (as the session and the finisher write theirs).

``manifest(...)`` gives a finished run's record as plain JSON values (a test may change or
drop keys before writing it by hand); ``write_manifest(...)`` writes one into a run folder.
Values are written as given, so a test can also write a record the reader must refuse
(``status="weird"``); keys the record does not know go to its ``extra``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from autoprof.runfolder import MANIFEST, Manifest

BASE: dict[str, Any] = {
    "schema_version": 1, "status": "complete", "qualname": None, "source_file": "train.py",
    "source_line": 10, "options": {}, "versions": {}, "host": "gpuhost", "pid": 4242,
    "rank": 0, "world_size": 1, "device": None,
    "started_at": "2026-11-30T08:00:00.000+00:00",
    "ended_at": "2026-11-30T08:00:05.000+00:00", "warmup_call_ms": [1.0],
    "steps_recorded": 3, "files": [], "error": None,
}
_FIELDS = {f.name for f in dataclasses.fields(Manifest)} - {"extra"}


def record(name: str = "step", **overrides: Any) -> Manifest:
    """A finished run's typed record: ``BASE``, the qualname defaulting to ``name``, then
    ``overrides`` (lists become the record's tuples)."""
    values: dict[str, Any] = {**BASE, "qualname": name, **overrides}
    known = {k: tuple(v) if isinstance(v, list) and k not in ("options",) else v
             for k, v in values.items() if k in _FIELDS}
    extra = {k: v for k, v in values.items() if k not in _FIELDS}
    return Manifest(name=name, **known, extra=extra)


def manifest(name: str = "step", **overrides: Any) -> dict[str, Any]:
    """``record(...)`` as the JSON object its file holds."""
    return record(name, **overrides).to_dict()


def write_manifest(run_dir: Path, name: str = "step", file: str = MANIFEST,
                   **overrides: Any) -> Path:
    """Write ``record(name, **overrides)`` to ``run_dir/file``; returns its path."""
    path = run_dir / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(record(name, **overrides).to_json())
    return path
