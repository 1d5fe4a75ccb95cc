"""The plain ``autoprof summary`` of a many-rank folder takes the map by itself.

A synthetic run of several ranks built from the committed two-rank NCCL DDP straggler run
(recorded on H200s): each rank a copy of the waiting rank's trace, one rank the slow rank's,
with ``distributedInfo`` naming its rank and the world size. Above the rank threshold the plain
summary prints the map's answer, and that answer is the merged path's: the same ranks, the
same per-rank columns and the same straggler.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

import autoprof.analysis as analysis
import autoprof.analysis.scale.auto as auto
from autoprof.analysis.metrics.ranks import RANK_COLUMNS
from autoprof.cli import main

RUN = next((Path(__file__).resolve().parents[2] / "data" / "gpu_h200_x2" / "runs"
            / "ddp_straggler").glob("*/"))


def _many_ranks(out: Path, world: int, slow: int) -> Path:
    """``world`` rank traces: the slow rank's trace at ``slow``, the waiting rank's elsewhere."""
    out.mkdir()
    sources = {}
    for rank in (0, 1):
        with gzip.open(next(RUN.glob(f"rank{rank}.*.pt.trace.json.gz")), "rt") as f:
            sources[rank] = json.load(f)
    for rank in range(world):
        trace = dict(sources[1 if rank == slow else 0])
        trace["distributedInfo"] = {**trace.get("distributedInfo", {}), "rank": rank,
                                    "world_size": world}
        with gzip.open(out / f"rank{rank}.pt.trace.json.gz", "wt") as f:
            json.dump(trace, f)
    return out


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))
    return a == b


def test_many_ranks_take_the_map_and_give_the_merged_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    monkeypatch.setattr(auto, "MAP_MIN_RANKS", 4)
    folder = _many_ranks(tmp_path / "run", world=4, slow=2)
    assert auto.reads_rank_by_rank(folder)
    assert main(["summary", str(folder), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "analysed one by one" in err
    answer = json.loads(out)
    assert answer["rank_by_rank"]["ranks_analysed"] == 4  # the map's, not the merged summary
    merged = analysis.load(folder).summary()
    assert [r["rank"] for r in answer["ranks"]] == [r["rank"] for r in merged["ranks"]]
    for ours, theirs in zip(answer["ranks"], merged["ranks"], strict=True):
        bad = [c for c in RANK_COLUMNS if not _close(ours[c], theirs[c])]
        assert not bad, (ours["rank"], bad)
    assert answer["straggler_rank"] == merged["straggler_rank"]


def test_few_small_ranks_keep_the_merged_summary(tmp_path: Path) -> None:
    folder = _many_ranks(tmp_path / "run", world=3, slow=1)
    assert not auto.reads_rank_by_rank(folder)  # three small ranks: below both thresholds
    assert not auto.reads_rank_by_rank(next(folder.glob("rank0.*")))  # one trace


def test_two_big_ranks_take_the_map(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _many_ranks(tmp_path / "run", world=2, slow=1)
    size_bytes = sum(p.stat().st_size for p in folder.iterdir())
    monkeypatch.setattr(auto, "MAP_MIN_BYTES", size_bytes)
    assert auto.reads_rank_by_rank(folder)
    monkeypatch.setattr(auto, "MAP_MIN_BYTES", size_bytes + 1)
    assert not auto.reads_rank_by_rank(folder)
