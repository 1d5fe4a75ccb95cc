"""The one rule for "is this cache still valid": the code that made it hashes the same.

Every cache autoprof writes (the events table beside a trace, ``loader/cache.py``; the
summary beside a run, ``report/summary_cache.py``; a rank's result, ``scale/rank_map.py``)
stores, next to what it holds, ``code_key()``: the names of the ``autoprof`` source files
the writing process had imported when it computed the cached value, and ``files_hash`` of
them (a SHA-256 over each path and its bytes). The entry is valid while
``code_key_valid(entry)``: the same files still hash the same. The analyses load lazily, so
the files a process imported are the code the value came from, or more (whatever the
process imported before). An edit to any of them recomputes the value; one to a module
the computation never imported keeps it; a module that starts importing a new one is
itself edited, so the key cannot miss new code. No version is bumped by hand. Imports
outside ``autoprof`` (numpy, pandas) are versioned by the package manager, not here.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path, PurePath

PACKAGE = "autoprof"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # .../autoprof


_RESOLVED: dict[str, str] = {}  # a module's file -> its resolved path, once per process


def loaded_files(root: Path = PACKAGE_ROOT) -> tuple[str, ...]:
    """Paths (relative to ``root``) of the package's source files this process imported."""
    found: set[str] = set()
    folders: dict[str, str] = {}  # each folder resolved once, not each of its modules
    under = os.path.join(str(root), "")  # root and a separator: a prefix of what lies below
    for name, module in list(sys.modules.items()):
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        path = _RESOLVED.get(file)
        if path is None:
            path = _RESOLVED[file] = _resolved(file, folders)
        if path.startswith(under):
            found.add(PurePath(path[len(under):]).as_posix())
    return tuple(sorted(found))


def _resolved(file: str, folders: dict[str, str]) -> str:
    """``str(Path(file).resolve())``: its folder resolved (once per folder) and its name,
    unless the file itself is a link."""
    folder, base = os.path.split(file)
    if not base or base in (".", "..") or os.path.islink(file):
        return str(Path(file).resolve())
    if folder not in folders:
        folders[folder] = str(Path(folder or ".").resolve())
    return os.path.join(folders[folder], base)


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


def code_key(root: Path = PACKAGE_ROOT) -> dict[str, object]:
    """What a cache entry written now stores as its code key."""
    files = loaded_files(root)
    return {"files": list(files), "hash": files_hash(files, root)}


def code_key_valid(entry: object, root: Path = PACKAGE_ROOT) -> bool:
    """Whether a stored code key still matches the files it names."""
    if not isinstance(entry, dict):
        return False
    files, stored = entry.get("files"), entry.get("hash")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return False
    return stored is not None and files_hash(tuple(files), root) == stored
