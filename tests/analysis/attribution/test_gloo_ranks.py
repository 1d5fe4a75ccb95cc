"""A real two-process gloo run on CPU, rank 1 slow on purpose: each rank gets its own
breakdown, and the fast rank's wait in the collective is named as waiting for rank 1."""

from __future__ import annotations

import pytest
from support.gloo import gloo_straggler_job

from autoprof.analysis import load


@pytest.mark.slow
def test_gloo_fast_rank_waits_for_the_straggler():
    pytest.importorskip("torch.distributed")
    s = load(gloo_straggler_job()).summary()
    assert s["straggler_rank"] == 1
    rank0, rank1 = s["ranks"]
    assert rank0["verdict"] == rank1["verdict"] == "cpu-only"
    for r in (rank0, rank1):
        bd = r["breakdown"]
        assert sum(bd["buckets_us"].values()) == pytest.approx(bd["step_us"], rel=0.01)
        assert bd["buckets_us"]["gpu_compute"] == 0
    # rank 0 spends its step inside the all-reduce, waiting for rank 1: communication
    first = rank0["opportunities"][0]
    assert first["cause"] == "host_communication"
    assert rank0["exposed_comm_pct"] > 50 > rank1["exposed_comm_pct"]
    assert first["pct_of_step"] > 50
    assert "waits here for rank 1" in first["hint"]
    # rank 1 sleeps on the host (untraced) before it joins
    assert rank1["opportunities"][0]["cause"] == "host_untraced"
    assert "waits here" not in rank1["opportunities"][0]["hint"]
