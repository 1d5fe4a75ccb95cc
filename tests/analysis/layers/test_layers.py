"""The layers are kept: the import-linter contracts in pyproject.toml (the one home of the
layer lists: show > integrations > collect > analysis stages > run-folder contract > base)
hold on the tree, and an inverted contract is reported broken (the check can fail)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def _lint(*config: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", *config], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


def test_every_import_contract_of_the_project_is_kept() -> None:
    out = _lint()
    assert out.returncode == 0, out.stdout[-3000:]
    assert "BROKEN" not in out.stdout and " 0 broken" in out.stdout


def test_an_upward_import_is_reported(tmp_path: Path) -> None:
    # the facade imports the loader: with the two layers swapped, the contract must break
    config = tmp_path / "inverted.toml"
    config.write_text("""
[tool.importlinter]
root_package = "autoprof"
exclude_type_checking_imports = true

[[tool.importlinter.contracts]]
name = "inverted"
type = "layers"
containers = ["autoprof.analysis"]
layers = ["loader", "run"]
""")
    out = _lint(str(config))
    assert out.returncode != 0 and "inverted BROKEN" in out.stdout.replace("\n", " ")


def test_importing_the_cli_loads_no_pandas() -> None:
    code = ("import sys, autoprof.cli; "
            "print(sorted(m for m in ('pandas', 'numpy', 'autoprof.analysis') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"
