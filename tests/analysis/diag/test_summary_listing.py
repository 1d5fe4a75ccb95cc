"""`autoprof summary` with no path reads the traces folder `view` opens, and a folder's
listing tells runs apart by their step time and problem size."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from autoprof.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "traces" / "examples"


@pytest.fixture
def traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "traces"
    shutil.copytree(EXAMPLES / "matmul_add", root / "matmul_add")
    monkeypatch.setenv("AUTOPROF_DIR", str(root))
    return root


def test_no_path_lists_the_traces_folder(traces: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["summary"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"autoprof summary: {traces} (4 runs")


def test_the_listing_has_step_time_and_size(traces: Path, capsys: pytest.CaptureFixture[str]):
    main(["summary", str(traces)])
    header, *rows = capsys.readouterr().out.splitlines()[1:]
    assert header.split()[:3] == ["verdict", "step", "size"]
    # verdict, then the step time with its unit (a step time on every run), then the size:
    # these runs state none, so it is blank (not the first op's largest dimension, a guess)
    cells = [re.match(r"\s*(\S+)\s+([\d.]+ [µm]?s)\s+(\S*)\s", row) for row in rows]
    assert all(cells), rows
    assert all(c.group(3) == "" or not c.group(3).isdigit() for c in cells if c), rows


def test_the_size_column_shows_a_size_the_run_states(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "sweep"
    for run in sorted((EXAMPLES / "matmul_add").iterdir()):
        if run.is_dir():
            shutil.copytree(run, root / f"n{len(list(root.glob('*'))) + 1}" / run.name)
    main(["summary", str(root)])
    rows = capsys.readouterr().out.splitlines()[2:]
    cells = [re.match(r"\s*(\S+)\s+([\d.]+ [µm]?s)\s+(\d+)\s", row) for row in rows]
    assert all(cells), rows
    assert sorted(c.group(3) for c in cells if c) == ["1", "2", "3", "4"]


def test_no_path_and_no_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("AUTOPROF_DIR", str(tmp_path / "none"))
    assert main(["summary"]) == 2
    err = capsys.readouterr().err
    assert err == f"autoprof: error: {tmp_path / 'none'}: no such file or directory\n"
