"""The code a per-rank result depends on, as one hash: the per-rank cache's code key.

A rank's result is computed by ``rank_map.compute_rank`` from the modules it imports, and
theirs, and so on. ``code_hash()`` is a SHA-256 over the path and bytes of exactly those
source files of the ``autoprof`` package: the import statements of each file (at the top or
inside functions, not those under ``if TYPE_CHECKING:``, which never run) are read with
``ast`` from ``ROOTS`` on, with every package ``__init__.py`` on the way. An edit to any of
them (a metric, the loader, the summary's helpers) changes the hash and so recomputes every
rank; an edit to a module the map never imports (the viewer, the recorder, the CLI, the run
diff) leaves the caches valid. Imports outside ``autoprof`` (numpy, pandas) are versioned
by the package manager, not here.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE = "autoprof"
# what compute_rank imports (rank_map itself, and its lazy imports inside the function)
ROOTS = ("autoprof.analysis.scale.rank_map", "autoprof.analysis.scale.result",
         "autoprof.analysis.analysis", "autoprof.analysis.loader.load",
         "autoprof.analysis.report.summary")
_HERE = Path(__file__).resolve()
_PACKAGE_ROOT = _HERE.parents[2]  # .../autoprof


def module_file(root: Path, name: str) -> Path | None:
    """The source file of module ``name`` under the package folder ``root``, or None."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def imported_names(source: str) -> set[str]:
    """Module names (``autoprof.*`` only) that ``source`` may import when it runs: for
    ``from a.b import c`` both ``a.b`` and ``a.b.c`` (c may be a module)."""
    names: set[str] = set()
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {n for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}


def _with_packages(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module runs its packages too."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def dependencies(root: Path = _PACKAGE_ROOT, roots: tuple[str, ...] = ROOTS) -> list[Path]:
    """The source files ``roots`` import, transitively, under the package folder ``root``."""
    seen: dict[str, Path] = {}
    todo = [p for r in roots for p in _with_packages(r)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_file(root, name)
        if path is None:
            continue
        seen[name] = path
        for found in imported_names(path.read_text(encoding="utf-8")):
            todo.extend(p for p in _with_packages(found) if p not in seen)
    return sorted(set(seen.values()))


def hash_files(root: Path, files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def code_hash() -> str:
    """SHA-256 of the source files a per-rank result depends on (module doc)."""
    return hash_files(_PACKAGE_ROOT, dependencies())
