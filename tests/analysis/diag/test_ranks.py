"""Multi-rank: per-rank table, collectives, and the straggler (synthetic two-rank traces)."""

from __future__ import annotations

import json

import pytest
from support.diagbuild import Trace

from autoprof.analysis import load
from autoprof.analysis.metrics.ranks import RANK_COLUMNS, rank_table, straggler_rank

STEP_US = 10_000.0


def two_ranks(compute_us: dict[int, float], steps: int = 4, nccl: bool = False) -> Trace:
    """Each rank computes `compute_us[rank]`, then all-reduces; the all-reduce ends on every
    rank when the slowest rank arrives (that is what a collective does)."""
    t = Trace()
    slowest = max(compute_us.values())
    for i in range(steps):
        base = 1_000.0 + i * STEP_US
        for rank, work in compute_us.items():
            t.step(i, base, STEP_US - 100.0, rank=rank)
            t.cpu("aten::mm", base + 10.0, work, rank=rank)
            arrive = base + 10.0 + work
            done = base + 10.0 + slowest + 500.0
            if nccl:
                t.cpu("c10d::allreduce_", arrive, 30.0, rank=rank)
                t.launch(arrive + 5.0, 10.0, arrive + 20.0, done - arrive - 20.0,
                         kernel="ncclDevKernel_AllReduce_Sum_f32_RING_LL", rank=rank)
            else:
                t.cpu("gloo:all_reduce", arrive, done - arrive, rank=rank)
                t.cpu("record_param_comms", arrive + 1.0, done - arrive - 2.0, rank=rank)
    return t


def test_rank_table_and_straggler_gloo():
    table = rank_table(two_ranks({0: 1_000.0, 1: 6_000.0}).frame())
    assert list(table.columns) == RANK_COLUMNS
    assert list(table["rank"]) == [0, 1]
    r0, r1 = table.iloc[0], table.iloc[1]
    assert r0["step_time_us_median"] == r1["step_time_us_median"] == STEP_US - 100.0
    # rank 0 waits 5000 + 500 us in the all-reduce (nested record_param_comms counted once)
    assert r0["collective_us_median"] == pytest.approx(5_500.0)
    assert r1["collective_us_median"] == pytest.approx(500.0)
    assert r1["compute_us_median"] - r0["compute_us_median"] == pytest.approx(5_000.0)
    assert straggler_rank(two_ranks({0: 1_000.0, 1: 6_000.0}).frame()) == 1


def test_straggler_with_nccl_kernels():
    frame = two_ranks({0: 4_000.0, 1: 500.0, 2: 500.0}, nccl=True).frame()
    table = rank_table(frame)
    assert table.set_index("rank").loc[1, "collective_us_median"] > 3_000.0
    assert straggler_rank(frame) == 0


@pytest.mark.parametrize("work", [{0: 3_000.0, 1: 3_000.0}, {0: 3_000.0, 1: 3_300.0}, {0: 1.0}])
def test_no_straggler_when_balanced_or_single(work):
    # 300 us of 9.9 ms is below the 10% threshold
    assert straggler_rank(two_ranks(work).frame()) is None


def test_folder_of_per_rank_traces_names_the_straggler(tmp_path):
    t = two_ranks({0: 1_000.0, 1: 6_000.0})
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        t.write(folder / f"rank{rank}.trace.json", rank=rank)
    run = load(folder)
    assert run.world_size == 2
    assert run.straggler_rank == 1
    found = {d.id: d for d in run.diagnostics()}
    assert found["straggler"].evidence["straggler_rank"] == 1
    assert "Rank 1" in found["straggler"].message
    summary = run.summary()
    assert summary["straggler_rank"] == 1
    assert [r["rank"] for r in summary["ranks"]] == [0, 1]
    json.dumps(summary, allow_nan=False)
