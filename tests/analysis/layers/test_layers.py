"""The analysis package's layers are kept: every import (lazy ones inside functions included,
those under ``if TYPE_CHECKING:`` left out) points to the same layer or one below it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import autoprof.analysis

ROOT = Path(autoprof.analysis.__file__).resolve().parent

# top to bottom; modules of one entry are one layer (independent of each other)
LAYERS = [
    ("autoprof.analysis.run",),
    ("autoprof.analysis.report", "autoprof.analysis.diff"),
    ("autoprof.analysis.analysis",),
    ("autoprof.analysis.diagnose",),
    ("autoprof.analysis.metrics",),
    ("autoprof.analysis.loader",),
]


def _layer(module: str) -> int | None:
    for index, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.AST) -> list[str]:
    """Absolute module names imported outside ``if TYPE_CHECKING:`` blocks."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_every_import_points_down() -> None:
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.parent == ROOT and path.name == "__init__.py":
            continue  # the package's re-exports
        source = _module_name(path)
        own = _layer(source)
        if own is None:
            continue
        for target in _runtime_imports(ast.parse(path.read_text())):
            layer = _layer(target)
            if layer is not None and layer < own:
                upward.append(f"{source} -> {target}")
    assert upward == []


def test_the_analysis_never_imports_collect_torch_or_the_viewer() -> None:
    banned = ("autoprof.record", "autoprof.viewer", "autoprof.cli", "torch", "streamlit",
              "altair")
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for target in _runtime_imports(ast.parse(path.read_text())):
            if target.split(".")[0] in banned or target.startswith(banned):
                found.append(f"{_module_name(path)} -> {target}")
    assert found == []


def test_the_layer_checker_sees_an_upward_lazy_import() -> None:
    tree = ast.parse("def f():\n    from autoprof.analysis.run import load\n")
    assert _layer(_runtime_imports(tree)[0]) == 0
    guarded = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from autoprof.analysis.run import Run\n")
    assert [m for m in _runtime_imports(guarded) if _layer(m) is not None] == []


def test_importing_the_cli_loads_no_pandas() -> None:
    code = ("import sys, autoprof.cli; "
            "print(sorted(m for m in ('pandas', 'numpy', 'autoprof.analysis') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"
