"""The code a per-rank result depends on: the per-rank cache's code key.

A rank's result is computed by the modules ``rank_map.compute_rank`` runs, the ones it
imports when it runs (the analyses are imported lazily, on first use). ``loaded_files()``
names, after a computation, every source file of the ``autoprof`` package this process has
imported: that computation's code, or more (whatever the process imported before). The
cache entry stores those files' names and ``files_hash`` of them (a SHA-256 over each path
and its bytes); the entry is valid while the same files hash the same. So an edit to any file
the computation ran (a metric, the loader, the summary's helpers) recomputes the rank, one to
a module it never imported (the viewer, the recorder, the CLI, the run diff, an analysis the
map does not ask for) keeps the cache. A module that starts importing a new one is itself
edited, so the key cannot miss new code. Imports outside ``autoprof`` (numpy, pandas) are
versioned by the package manager, not here.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path

PACKAGE = "autoprof"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # .../autoprof


def loaded_files(root: Path = PACKAGE_ROOT) -> tuple[str, ...]:
    """Paths (relative to ``root``) of the package's source files this process imported."""
    found: set[str] = set()
    for name, module in list(sys.modules.items()):
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        path = Path(file).resolve()
        if path.is_relative_to(root):
            found.add(path.relative_to(root).as_posix())
    return tuple(sorted(found))


@functools.lru_cache(maxsize=32)
def files_hash(files: tuple[str, ...], root: Path = PACKAGE_ROOT) -> str | None:
    """SHA-256 over each file's path and bytes, in order; None when one cannot be read (a
    module removed or renamed: the entry is stale). Cached per process (every rank of a run
    names the same files, so a second open hashes them once)."""
    digest = hashlib.sha256()
    for name in files:
        try:
            data = (root / name).read_bytes()
        except OSError:
            return None
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(data)
    return digest.hexdigest()


def code_entry(root: Path = PACKAGE_ROOT) -> dict[str, object]:
    """What a cache entry written now stores as its code key."""
    files = loaded_files(root)
    return {"files": list(files), "hash": files_hash(files, root)}


def code_entry_valid(entry: object, root: Path = PACKAGE_ROOT) -> bool:
    """Whether a stored code key still matches the files it names."""
    if not isinstance(entry, dict):
        return False
    files, stored = entry.get("files"), entry.get("hash")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return False
    return stored is not None and files_hash(tuple(files), root) == stored
