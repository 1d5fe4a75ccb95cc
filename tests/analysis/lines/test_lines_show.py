"""What people read: `autoprof lines RUN` (text and --json), the summary's lines (top ops,
opportunities' where, the `source_lines` key) and the viewer's Source and Ops pages, on a
recorded program whose lines are known."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.apptest import open_app, select_run, visit

from autoprof.analysis import load
from autoprof.cli import main

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location("lines_record", HERE / "test_lines_record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.record(tmp_path_factory.mktemp("show"), True)  # type: ignore[no-any-return]


def _slow_line() -> int:
    text = (HERE / "known_lines.py").read_text().splitlines()
    return next(i for i, t in enumerate(text, 1) if t.endswith("# LINE: slow_op"))


def test_lines_command(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lines", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"known_lines.py:{_slow_line()} (step)" in out and "aten::mm" in out
    assert main(["lines", "--json", "--top", "3", str(run_dir)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["has_lines"] and data["match_pct"] >= 95.0 and len(data["lines"]) == 3
    assert data["lines"][0]["line"] == _slow_line()


def test_summary_names_lines(run_dir: Path) -> None:
    summary = load(run_dir).summary()
    mm = next(r for r in summary["top_ops"]["by_self_cpu"] if r["name"] == "aten::mm")
    assert mm["source"].endswith(f"known_lines.py:{_slow_line()} (step)")
    wheres = [w for o in summary["opportunities"] for w in o["where"] if w["name"] == "aten::mm"]
    assert wheres and all(w["source"] == mm["source"] for w in wheres)
    assert summary["source_lines"]["lines"][0]["source"] == mm["source"]


def _app_on(run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The viewer over a traces folder holding the known-lines run, that run selected."""
    root = tmp_path / "traces"
    shutil.copytree(run_dir.parent, root / "known_lines")
    at = open_app(root, monkeypatch)
    select_run(at, "known_lines")
    return at


def test_viewer_source_and_ops_pages(run_dir: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    at = _app_on(run_dir, tmp_path, monkeypatch)
    visit(at, "source")
    listing = at.dataframe[0].value
    row = listing[listing["line"] == _slow_line()].iloc[0]
    assert "BIG @ BIG" in row["code"] and row["self_cpu_us"] != ""
    visit(at, "ops")
    ops = at.dataframe[0].value
    assert ops.loc[ops["name"] == "aten::mm", "source"].iloc[0].endswith(
        f":{_slow_line()} (step)")


def test_overview_opportunities_name_their_line(run_dir: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    at = _app_on(run_dir, tmp_path, monkeypatch)
    visit(at, "overview")
    tables = [d.value for d in at.dataframe if "line" in d.value.columns]
    assert tables, "no opportunities table with a line column"
    table = tables[0]
    mm = table[table["where"].str.startswith("aten::mm")]
    assert mm["line"].iloc[0] == f"tests/analysis/lines/known_lines.py:{_slow_line()} (step)"
    assert set(table.loc[table["where"].str.startswith("between ops"), "line"]) <= {""}
