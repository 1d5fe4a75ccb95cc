"""The repository at a revision, extracted beside this checkout for a benchmark's ``before``
side, its package compiled to bytecode as an installed one is, and the ``median [min-max]``
cell the side-by-side scripts print."""

from __future__ import annotations

import compileall
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


def compile_tree(root: Path) -> Path:
    """``root``'s ``autoprof`` package compiled to bytecode (``__pycache__`` beside each
    module, as ``pip install`` leaves an installed package), so that the modules a first
    open imports on first use are read, not compiled from source, inside the timed span
    (under ``PYTHONDONTWRITEBYTECODE=1`` and in a fresh ``git archive`` there is no bytecode
    otherwise: about 40 ms of a 100k-event first open here). Returns ``root``."""
    compileall.compile_dir(root / "autoprof", quiet=1, workers=1)
    return root


def compiled_sides(rev: str, into: Path) -> Path:
    """A side-by-side's two trees, each compiled (``compile_tree``): ``rev`` extracted under
    ``into`` (the ``before`` side, returned) and this checkout."""
    compile_tree(REPO)
    return compile_tree(extract_revision(rev, into))


def cell(values: list[float]) -> str:
    """``median [min-max]`` of ``values``, three significant digits."""
    return f"{statistics.median(values):.3g} [{min(values):.3g}-{max(values):.3g}]"
