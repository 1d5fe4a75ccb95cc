"""Helpers for the core tests: tiny schedules, run-folder readers, a flush after each test."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

TINY: dict[str, int] = {"wait": 0, "warmup": 1, "active": 1, "repeat": 1}


@pytest.fixture
def traces_root() -> Path:
    """The per-test AUTOPROF_DIR set by the suite-wide conftest."""
    return Path(os.environ["AUTOPROF_DIR"])


@pytest.fixture(autouse=True)
def _flush_sessions():
    """End any run a test left recording, before the suite-wide guard checks the profiler."""
    yield
    import sys

    session = sys.modules.get("autoprof.record.session")
    if session is not None:
        session.flush_all()
    decorator = sys.modules.get("autoprof.record.decorator")
    if decorator is not None:
        decorator._regions.clear()  # region names are process-wide; tests start afresh
        decorator._settled.clear()


def run_dirs(root: Path, name: str) -> list[Path]:
    from autoprof.runfolder import safe_component

    folder = root / safe_component(name)
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.exists() else []


def only_run(root: Path, name: str) -> Path:
    runs = run_dirs(root, name)
    assert len(runs) == 1, f"expected one run of {name!r} under {root}, found {runs}"
    return runs[0]


def manifest(run_dir: Path, file: str = "manifest.json") -> dict[str, Any]:
    return json.loads((run_dir / file).read_text())


def run_listing(run_dir: Path) -> list[str]:
    """The names in a run folder, less the source-lines trace of its first warm-up step
    (``lines.<worker>.json.gz``), which the tests of failed exports do not look at."""
    from fnmatch import fnmatch

    from autoprof.runfolder import lines_name

    return sorted(p.name for p in run_dir.iterdir() if not fnmatch(p.name, lines_name("*")))


def trace_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("*.pt.trace.json.gz"))


def load_trace(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def event_names(path: Path) -> list[str]:
    return [e.get("name", "") for e in load_trace(path)["traceEvents"] if e.get("ph") == "X"]
