"""A real two-process gloo run (CPU), rank 1 delayed on purpose: the analysis names it."""

from __future__ import annotations

import pytest
from support.gloo import gloo_straggler_job

from autoprof.analysis import load


@pytest.mark.slow
def test_gloo_two_ranks_straggler():
    pytest.importorskip("torch.distributed")
    run = load(gloo_straggler_job())
    assert run.world_size == 2
    table = run.ranks()
    assert list(table["rank"]) == [0, 1]
    assert (table["collectives"] > 0).all()
    compute = table.set_index("rank")["compute_us_median"]
    assert compute[1] - compute[0] >= 60_000  # the 80 ms sleep, before the all-reduce
    assert run.straggler_rank == 1
    assert {d.id for d in run.diagnostics()} >= {"straggler"}
    assert run.summary()["straggler_rank"] == 1
