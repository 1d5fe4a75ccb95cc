"""A folder of rank traces 0, 2 and 5 of a world of 6 says ranks 1, 3 and 4 are missing and
that the run is partial: never "6 rank(s)" silently."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from autoprof.analysis import load
from autoprof.cli import main

EXAMPLE = sorted((Path(__file__).resolve().parents[2] / "traces" / "examples"
                  / "eager_100").iterdir())[0]


def _rank_traces(folder: Path, ranks: tuple[int, ...], world: int) -> Path:
    (trace,) = EXAMPLE.glob("*.pt.trace.json.gz")
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    folder.mkdir()
    for rank in ranks:
        doc["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": world}
        (folder / f"rank{rank}.1.pt.trace.json.gz").write_bytes(
            gzip.compress(json.dumps(doc).encode()))
    return folder


def test_the_missing_ranks_are_named_and_the_run_is_partial(tmp_path: Path) -> None:
    run = load(_rank_traces(tmp_path / "ranks", (0, 2, 5), 6))
    assert run.world_size == 6 and run.missing_ranks == (1, 3, 4)
    assert any("1, 3, 4 of 6" in w for w in run.load_warnings)
    summary = run.summary()
    assert summary["missing_ranks"] == [1, 3, 4] and summary["status"] == "partial"


def test_the_text_summary_says_which_ranks_are_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["summary", str(_rank_traces(tmp_path / "ranks", (0, 2, 5), 6))])
    out = capsys.readouterr().out
    assert "6 rank(s), 3 missing (1, 3, 4)" in out and "status partial" in out


def test_a_whole_world_has_none_missing(tmp_path: Path) -> None:
    run = load(_rank_traces(tmp_path / "ranks", (0, 1), 2))
    assert run.missing_ranks == () and run.summary()["status"] is None
