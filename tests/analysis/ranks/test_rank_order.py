"""One ordering of ranks: the straggler rule's key orders every list of ranks, so the straggler
heads the slowest ranks; and collectives waited on the host (gloo) are exposed communication.

The scenario is the two-rank gloo run's shape: rank 1 computes long before its all-reduce
(the straggler), rank 0 joins early and waits in `gloo:all_reduce` on gloo's worker thread;
rank 0's step is a little longer than rank 1's, which a step-time ordering lists first.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.diagbuild import Ev, Trace

from autoprof.analysis.kinds import BUCKETS, COMMUNICATION_BUCKETS
from autoprof.analysis.metrics.breakdown import breakdown
from autoprof.analysis.metrics.ranks import RANK_COLUMNS, rank_order, rank_table, straggler_from
from autoprof.analysis.report.render import render
from autoprof.analysis.scale import summarize_ranks

STEP_US = 1000.0
WORKER_TID = 2  # gloo runs the collective on a thread of its own


def _gloo_step(t: Trace, rank: int, n: int, compute_us: float, wait_us: float,
               step_us: float) -> None:
    t0 = n * 2 * STEP_US
    t.step(n, t0, step_us, rank=rank)
    t.cpu("aten::mm", t0 + 5, 40, rank=rank)
    t.cpu("c10d::allreduce_", t0 + compute_us, 10, rank=rank)
    t.events.append(Ev("gloo:all_reduce", "user_annotation", t0 + compute_us + 5, wait_us,
                       tid=WORKER_TID, rank=rank))


def gloo_two_ranks() -> Trace:
    """Rank 1 computes 900 us before its all-reduce; rank 0 joins at 60 us and waits."""
    t = Trace()
    for n in range(1, 4):
        _gloo_step(t, 0, n, compute_us=60, wait_us=920, step_us=STEP_US + 10)
        _gloo_step(t, 1, n, compute_us=900, wait_us=80, step_us=STEP_US)
    return t


def test_the_straggler_heads_the_rank_order_and_the_jobs_report(tmp_path: Path) -> None:
    t = gloo_two_ranks()
    for rank in (0, 1):
        t.write(tmp_path / f"rank{rank}.pt.trace.json", rank)
    answer = summarize_ranks(tmp_path, use_cache=False)
    table = answer.rank_table()
    # the scenario: the straggler's step is the shorter one, so step time alone misorders
    steps = table.set_index("rank")["step_time_us_median"]
    assert answer.straggler_rank == 1 and steps[0] > steps[1]
    assert rank_order(table)[0] == answer.straggler_rank
    assert [w["rank"] for w in answer.worst_ranks] == rank_order(table)
    text = render(answer.report())
    named = re.search(r"STRAGGLER: rank (\d+)", text)
    section = text.split("SLOWEST RANKS", 1)[1]
    listed = re.findall(r"^\s+rank\s+(\d+)\s+step", section, flags=re.MULTILINE)
    assert named is not None and listed and int(listed[0]) == int(named[1])


def test_gloo_waits_are_exposed_communication_not_host_work() -> None:
    events = gloo_two_ranks().frame()
    bd = breakdown(events)
    steps = bd.steps
    total = steps[[f"{b}_us" for b in BUCKETS]].sum(axis=1)
    assert np.allclose(total, steps["step_us"])  # the buckets still sum to the step
    waiting = steps[steps["rank"] == 0]
    assert (waiting["host_communication_us"] > waiting["host_cpu_work_us"]).all()
    assert (waiting["host_communication_us"] > 0.5 * waiting["step_us"]).all()
    table = rank_table(events).set_index("rank")
    for rank in (0, 1):
        pct = bd.for_rank(rank).mean()["buckets_pct"]
        assert isinstance(pct, dict)
        exposed = sum(pct[b] for b in COMMUNICATION_BUCKETS)
        assert table.loc[rank, "exposed_comm_pct"] == pytest.approx(exposed)
    # the rank that waits shows more exposed communication than the one it waits for
    assert table.loc[0, "exposed_comm_pct"] > table.loc[1, "exposed_comm_pct"]
    where = bd.where[(bd.where["rank"] == 0) & (bd.where["bucket"] == "host_communication")]
    assert "gloo:all_reduce" in set(where["name"].astype(str))


def test_a_host_collective_that_launches_gpu_work_stays_a_launch() -> None:
    """NCCL: `c10d::allreduce_` only enqueues a kernel; its host time is a launch, and the
    kernel alone on the GPU is the exposed communication."""
    t = Trace()
    for n in range(1, 3):
        t0 = n * 2 * STEP_US
        t.step(n, t0, STEP_US)
        t.cpu("c10d::allreduce_", t0 + 100, 50)
        t.launch(t0 + 110, 20, gpu_ts=t0 + 200, gpu_dur=500, kernel="ncclDevKernel_AllReduce")
    bd = breakdown(t.frame())
    assert (bd.steps["host_communication_us"] == 0).all()
    assert (bd.steps["host_launch_us"] > 0).all()
    assert (bd.steps["gpu_communication_us"] > 0).all()


def _random_table(rng: random.Random) -> pd.DataFrame:
    n = rng.randint(2, 9)
    kind = rng.choice(["nccl", "gloo", "apart"])
    rows = []
    for rank in range(n):
        collectives = 0 if kind == "apart" and rank == 0 else rng.randint(1, 5)
        rows.append({c: np.nan for c in RANK_COLUMNS} | {
            "rank": rank, "steps": 3,
            "step_time_us_median": rng.choice([1000.0, 1000.0 + rng.random() * 300]),
            "compute_us_median": rng.random() * 900,
            "collectives": collectives,
            "gpu_collectives": collectives if kind == "nccl" else 0,
            "exposed_comm_pct": rng.random() * 90, "verdict": "mixed"})
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def test_the_straggler_is_always_first_in_the_rank_order() -> None:
    rng = random.Random(7)
    found = 0
    for _ in range(300):
        table = _random_table(rng)
        order = rank_order(table)
        assert sorted(order) == table["rank"].tolist()  # every rank, once
        straggler = straggler_from(table)
        if straggler is not None:
            found += 1
            assert order[0] == straggler
    assert found > 50  # the property was exercised, not vacuously true
