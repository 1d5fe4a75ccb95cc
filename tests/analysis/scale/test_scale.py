"""The many-rank map/reduce gives the whole-run summary's per-rank answer, on any executor.

The committed two-rank NCCL DDP runs (recorded on H200s): the rank table, the straggler and
the breakdown of ``summarize_ranks`` match ``autoprof.load(run).summary()``; the per-rank
results are cached beside the traces and read back on a second open; a Dask LocalCluster's
executor and a local process pool give the same answer as one process.
"""

from __future__ import annotations

import math
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import autoprof.analysis as analysis
from autoprof.analysis.metrics.ranks import RANK_COLUMNS
from autoprof.analysis.scale import RankResult, rank_map, reduce_ranks, summarize_ranks

DATA = Path(__file__).resolve().parents[2] / "data"
RUNS = sorted((DATA / "gpu_h200_x2" / "runs").glob("ddp_*/*/"))
STRAGGLER = next(r for r in RUNS if r.parent.name == "ddp_straggler")


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)  # type: ignore[arg-type]
    return a == b


@pytest.mark.parametrize("run", RUNS[:2] + [STRAGGLER], ids=lambda p: p.parent.name)
def test_map_reduce_matches_the_whole_run_summary(run: Path) -> None:
    whole = analysis.load(run).summary()
    answer = summarize_ranks(run, use_cache=False)
    rows = answer.to_dict()["ranks"]
    assert [r["rank"] for r in rows] == [r["rank"] for r in whole["ranks"]]
    for ours, theirs in zip(rows, whole["ranks"], strict=True):
        bad = [c for c in RANK_COLUMNS if not _same(ours[c], theirs[c])]
        assert not bad, (run, ours["rank"], bad)
    assert answer.straggler_rank == whole["straggler_rank"]
    for bucket, value in whole["breakdown"]["buckets_us"].items():
        assert math.isclose(answer.breakdown["buckets_us"][bucket], value, rel_tol=1e-9,
                            abs_tol=1e-6), bucket
    assert answer.events == whole["events"]


def test_the_straggler_run_names_rank_one() -> None:
    answer = summarize_ranks(STRAGGLER, use_cache=False)
    assert answer.straggler_rank == 1
    assert answer.worst_ranks[0]["rank"] in (0, 1)
    assert set(answer.spread) == {"step_time_us_median", "exposed_comm_pct"}
    assert answer.spread["exposed_comm_pct"]["max"] > answer.spread["exposed_comm_pct"]["min"]


def test_per_rank_results_are_cached_and_read_back(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    shutil.copytree(STRAGGLER, run)
    first = summarize_ranks(run, use_cache=True)
    caches = sorted(run.glob("*" + rank_map.SUFFIX))
    assert len(caches) == 2
    # the loader never takes a cache for a trace
    assert analysis.load(run).world_size == 2

    def no_compute(task: object) -> RankResult:
        raise AssertionError("recomputed a cached rank")

    monkeypatch.setattr(rank_map, "compute_rank", no_compute)
    second = summarize_ranks(run, use_cache=True)
    assert second.to_dict() == first.to_dict()
    # a changed trace is recomputed
    trace = sorted(run.glob("rank0.*.pt.trace.json.gz"))[0]
    trace.write_bytes(trace.read_bytes())
    with pytest.raises(AssertionError, match="recomputed"):
        summarize_ranks(run, use_cache=True)


def test_a_garbled_cache_is_ignored(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(STRAGGLER, run)
    first = summarize_ranks(run, use_cache=True)
    for cache in run.glob("*" + rank_map.SUFFIX):
        cache.write_text("{not json")
    assert summarize_ranks(run, use_cache=True).to_dict() == first.to_dict()


def test_reduce_is_order_free_and_finds_outliers() -> None:
    answer = summarize_ranks(STRAGGLER, use_cache=False)
    backwards = reduce_ranks(answer.ranks[::-1], 2, answer.path, answer.record)
    assert backwards.to_dict() == answer.to_dict()
    base = answer.ranks[0]
    many = []
    for rank in range(9):
        row = {**base.row, "rank": rank,
               "step_time_us_median": 10_000.0 + rank * (10.0 if rank < 8 else 5_000.0)}
        many.append(RankResult(**{**base.__dict__, "rank": rank, "row": row}))
    reduced = reduce_ranks(many, 9)
    assert reduced.outliers == [8]
    assert reduced.worst_ranks[0]["rank"] == 8


def test_any_executor_gives_the_same_answer() -> None:
    one = summarize_ranks(STRAGGLER, use_cache=False).to_dict()
    with ThreadPoolExecutor(2) as pool:
        assert summarize_ranks(STRAGGLER, executor=pool, use_cache=False).to_dict() == one
    assert summarize_ranks(STRAGGLER, jobs=2, use_cache=False).to_dict() == one


def test_dask_local_cluster_gives_the_same_answer() -> None:
    distributed = pytest.importorskip("distributed")
    one = summarize_ranks(STRAGGLER, use_cache=False).to_dict()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        answer = summarize_ranks(STRAGGLER, executor=client.get_executor(), use_cache=False)
    assert answer.to_dict() == one


def test_cli_jobs_prints_the_reduce(capsys: pytest.CaptureFixture[str]) -> None:
    from autoprof.cli import main

    assert main(["summary", str(STRAGGLER), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "STRAGGLER: rank 1" in out and "RANKS' SPREAD" in out
    assert main(["summary", str(STRAGGLER), "--jobs", "1", "--json"]) == 0
    import json

    answer = json.loads(capsys.readouterr().out)
    assert answer["straggler_rank"] == 1 and len(answer["ranks"]) == 2
    assert main(["summary", str(STRAGGLER), "--jobs", "1", "--format", "markdown"]) == 0
    assert "**Ranks analysed one by one**: 2 of 2; straggler: rank 1" in capsys.readouterr().out


@pytest.mark.parametrize("run", RUNS[:2] + [STRAGGLER], ids=lambda p: p.parent.name)
def test_the_ranks_grids_from_the_map_are_the_whole_runs(run: Path) -> None:
    """The Ranks page of a run analysed rank by rank draws, from the ranks' results, the
    rank x bucket and rank x step grids the whole run's breakdown gives."""
    from autoprof.analysis.scale.heatmap import (
        rank_by_bucket,
        rank_by_step,
        results_breakdown,
        results_steps,
    )

    whole = analysis.load(run).breakdown()
    results = summarize_ranks(run, use_cache=False).ranks
    for grid, expected in ((rank_by_bucket(results_breakdown(results)), rank_by_bucket(whole)),
                           (rank_by_step(results_steps(results)), rank_by_step(whole))):
        assert len(grid) == len(expected) > 0
        key = ["rank_lo", "column"]
        got = grid.sort_values(key).reset_index(drop=True)
        want = expected.sort_values(key).reset_index(drop=True)
        assert got[["rank_lo", "rank_hi", "ranks", "column"]].equals(
            want[["rank_lo", "rank_hi", "ranks", "column"]])
        assert all(_same(a, b) for a, b in zip(got["value"], want["value"], strict=True))


def test_a_result_keeps_the_breakdowns_steps_through_its_cache() -> None:
    (result, *_) = summarize_ranks(STRAGGLER, use_cache=False).ranks
    assert len(result.steps) == len(result.step_us) > 0
    assert result.steps == sorted(result.steps)
    assert RankResult.from_json(result.to_json()) == result
    older = result.to_json().replace('"format_version": 2', '"format_version": 1')
    assert RankResult.from_json(older) is None  # recomputed, not read without its steps
