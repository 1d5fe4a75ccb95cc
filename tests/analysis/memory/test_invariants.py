"""Odd memory events (frees of memory allocated before the window, reused addresses, missing
totals, events outside any step or thread with ops) load and analyse without error, and the
tables agree with each other."""

from __future__ import annotations

import numpy as np
import pytest
from support.memory_trace import TID, mem, write, x

import autoprof.analysis as analysis


def _random_trace(seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    events = [x("ProfilerStep#0", 0, 500), x("ProfilerStep#1", 600, 500),
              x("region_a", 10, 200), x("aten::empty", 20, 50, cat="cpu_op"),
              x("region_b", 650, 300)]
    held, live = 10_000, []
    for _ in range(200):
        ts = float(rng.uniform(-50, 1200))  # some before, between and after the steps
        if live and rng.random() < 0.45:
            addr, size = live.pop(int(rng.integers(len(live))))
            held -= size
            events.append(mem(ts, -size, held, 1 << 20, addr))
        else:
            size = int(rng.integers(1, 4096))
            addr = int(rng.integers(1, 40))  # addresses are reused
            held += size
            live.append((addr, size))
            events.append(mem(ts, size, held, 1 << 20, addr, device=int(rng.integers(-1, 2))))
    events.append(mem(5, -777, held, 1 << 20, 999))  # a free of something never seen
    odd = mem(7, 64, held, 0, 1000)
    del odd["args"]["Total Reserved"]
    odd["tid"] = TID + 1  # a thread with no ops
    events.append(odd)
    return events


@pytest.mark.parametrize("seed", range(5))
def test_random_memory_events(tmp_path, seed):
    run = analysis.load(write(tmp_path / "t.json", _random_trace(seed)))
    memory = run.analysis.memory
    tl = memory.timeline
    assert tl.groupby(["rank", "device"])["ts_us"].apply(lambda s: s.is_monotonic_increasing).all()
    for _, row in memory.devices.iterrows():
        mine = tl[(tl["rank"] == row["rank"]) & (tl["device"] == row["device"])]
        assert row["peak_allocated_bytes"] == mine["allocated_bytes"].max()
        assert row["allocations"] + row["frees"] == len(mine)
    steps = memory.steps
    assert (steps["growth_bytes"] == steps["end_allocated_bytes"]
            - steps["start_allocated_bytes"]).all()
    assert (steps["peak_bytes"] >= steps[["start_allocated_bytes", "end_allocated_bytes"]]
            .max(axis=1)).all()
    allocs = tl[tl["bytes"] > 0]
    assert memory.by_region["allocated_bytes"].sum() == allocs["bytes"].sum()
    assert memory.by_op["allocated_bytes"].sum() == allocs["bytes"].sum()
    assert set(tl["device"]) == {"cpu", "cuda:0", "cuda:1"}
    summary = run.summary()
    assert len(summary["memory"]["devices"]) == 3


def test_missing_columns_are_named(tmp_path):
    from autoprof.analysis.metrics.memory_use import memory_analysis
    from autoprof.analysis.metrics.stats import MissingColumnsError

    run = analysis.load(write(tmp_path / "t.json", _random_trace(0)))
    with pytest.raises(MissingColumnsError, match="parent"):
        memory_analysis(run.events.drop(columns=["parent"]), run.memory_events)
