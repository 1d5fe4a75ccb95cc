"""The per-rank cache's code key covers the code the map runs and nothing else: an edit to
a metric or the loader recomputes every rank, one to the viewer, the recorder, the CLI or the
run diff keeps the caches."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autoprof.analysis.scale import code_key

PACKAGE = Path(code_key.__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("pkg") / "autoprof"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _hash(root: Path) -> str:
    return code_key.hash_files(root, code_key.dependencies(root))


def _names(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in code_key.dependencies(root)}


def test_the_key_holds_what_compute_rank_imports_and_not_the_rest() -> None:
    names = _names(PACKAGE)
    for needed in ("analysis/scale/rank_map.py", "analysis/loader/decode.py",
                   "analysis/loader/chunks.py", "analysis/metrics/breakdown.py",
                   "analysis/metrics/efficiency.py", "analysis/report/summary.py",
                   "analysis/analysis.py", "runfolder/manifest.py", "units.py"):
        assert needed in names, needed
    assert not any(n.startswith(("viewer/", "record/", "analysis/diff/")) for n in names)
    assert "cli.py" not in names


@pytest.mark.parametrize(("edited", "changes"), [
    ("viewer/views/ranks.py", False),
    ("record/session/core.py", False),
    ("analysis/diff/render.py", False),
    ("cli.py", False),
    ("analysis/metrics/breakdown.py", True),
    ("analysis/loader/columns.py", True),
])
def test_an_edit_changes_the_key_only_where_the_map_reads(copy: Path, edited: str,
                                                          changes: bool) -> None:
    before = _hash(copy)
    path = copy / edited
    original = path.read_text()
    try:
        path.write_text(original + "\n# an edit\n")
        assert (_hash(copy) != before) is changes
    finally:
        path.write_text(original)


def test_type_checking_imports_are_not_followed() -> None:
    source = ("from typing import TYPE_CHECKING\nimport autoprof.units\n"
              "if TYPE_CHECKING:\n    from autoprof.viewer import app\n"
              "def f():\n    from autoprof.analysis.loader import load\n")
    assert code_key.imported_names(source) == {
        "autoprof.units", "autoprof.analysis.loader", "autoprof.analysis.loader.load"}
