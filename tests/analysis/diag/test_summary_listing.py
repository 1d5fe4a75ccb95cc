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
    # verdict, then the step time with its unit (a step time on every run), then the size
    cells = [re.match(r"\s*(\S+)\s+([\d.]+ [µm]?s)\s+(\d+)\s", row) for row in rows]
    assert all(cells), rows
    assert sorted(c.group(3) for c in cells if c) == ["4096", "4096", "64", "64"]


def test_no_path_and_no_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("AUTOPROF_DIR", str(tmp_path / "none"))
    assert main(["summary"]) == 2
    err = capsys.readouterr().err
    assert err == f"autoprof: error: {tmp_path / 'none'}: no such file or directory\n"
