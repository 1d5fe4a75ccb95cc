"""The cached summary goes stale with the run folder's source-lines trace: a lines trace
rewritten or removed after the summary was cached gives the summary of the lines as they
are now, never the cached one."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

import autoprof
from autoprof.analysis.metrics.lines import find_lines_files
from autoprof.analysis.report.summary_cache import summary_path

X = torch.randn(64, 64)


def step() -> float:
    return float((X @ X).sum().item())


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")  # small runs are cached too
    fn = autoprof.autoprof(name="cached", out_dir=str(tmp_path), warmup_calls=0,
                           schedule={"wait": 0, "warmup": 2, "active": 2})(step)
    for _ in range(4):
        fn()
    fn.autoprof_session.flush()
    (found,) = sorted((tmp_path / "cached").iterdir())
    return found


def _sources(summary: dict[str, object]) -> set[str]:
    block = summary.get("source_lines")
    assert isinstance(block, dict)
    return {str(row["source"]) for row in block["lines"]}


def _relabel(path: Path, source: str) -> None:
    """Every line label of the lines trace at ``path`` names ``source`` instead."""
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    for event in data["traceEvents"]:
        if str(event.get("name", "")).startswith("autoprof::line "):
            event["name"] = "autoprof::line " + source
    with gzip.open(path, "wt") as f:
        json.dump(data, f)


def test_a_rewritten_lines_trace_is_read_again(run_dir: Path) -> None:
    first = autoprof.load(run_dir).summary()
    assert any(s.endswith("test_lines_cache.py:22 (step)") for s in _sources(first))
    assert summary_path(autoprof.load(run_dir).trace_paths[0]).exists()  # it was cached
    (lines,) = find_lines_files(run_dir).values()
    _relabel(lines, "/elsewhere/train.py:7 (step)")
    assert _sources(autoprof.load(run_dir).summary()) == {"/elsewhere/train.py:7 (step)"}


def test_a_removed_lines_trace_leaves_no_lines(run_dir: Path) -> None:
    assert "source_lines" in autoprof.load(run_dir).summary()
    for lines in find_lines_files(run_dir).values():
        lines.unlink()
    assert "source_lines" not in autoprof.load(run_dir).summary()
