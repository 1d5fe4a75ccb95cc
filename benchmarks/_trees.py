"""The repository at a revision, extracted beside this checkout for a benchmark's ``before``
side, and the ``median [min-max]`` cell the side-by-side scripts print."""

from __future__ import annotations

import io
import statistics
import subprocess
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def extract_revision(rev: str, into: Path) -> Path:
    """The tree of ``rev`` (``git archive``) written under ``into``; returns ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def cell(values: list[float]) -> str:
    """``median [min-max]`` of ``values``, three significant digits."""
    return f"{statistics.median(values):.3g} [{min(values):.3g}-{max(values):.3g}]"
