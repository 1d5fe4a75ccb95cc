"""The timeline thinned for charts keeps each device's extremes; the empty timeline's columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.memory_use import TIMELINE_COLUMNS, plot_points, timeline_of


def test_plot_points_keeps_the_peak_and_the_ends():
    n = 50_000
    rng = np.random.default_rng(0)
    held = rng.integers(0, 1000, n)
    held[31_337] = 10_000  # one spike
    tl = pd.DataFrame({"ts_us": np.arange(n, dtype=float), "rank": 0, "device": "cuda:0",
                       "allocated_bytes": held, "reserved_bytes": held})
    small = tl.iloc[:100].assign(device="cpu")
    shown = plot_points(pd.concat([tl, small], ignore_index=True), max_points=1000)
    cuda = shown[shown["device"] == "cuda:0"]
    assert len(cuda) <= 1002
    assert cuda["allocated_bytes"].max() == 10_000
    assert cuda["ts_us"].iat[0] == 0 and cuda["ts_us"].iat[-1] == n - 1
    assert len(shown[shown["device"] == "cpu"]) == 100  # small series are left whole
    assert shown["ts_us"][shown["device"] == "cuda:0"].is_monotonic_increasing


def test_empty_timeline_has_the_columns():
    assert list(timeline_of(None).columns) == TIMELINE_COLUMNS


def test_region_marks_are_capped(tmp_path):
    from support.memory_trace import mem, write, x

    import autoprof.analysis as analysis

    events = [x("ProfilerStep#0", 0, 100_000)]
    for i in range(1500):  # 1,500 short spans of one region, each allocating
        events += [x("layer", 10 + 50 * i, 20 + (i == 700)), mem(15 + 50 * i, 64, 64, 0, 1),
                   mem(25 + 50 * i, -64, 0, 0, 1)]
    memory = analysis.load(write(tmp_path / "t.json", events)).analysis.memory
    regions = memory.marks[memory.marks["kind"] == "region"]
    assert len(regions) == 1000
    assert (regions["end_us"] - regions["start_us"]).max() == 21  # the longest is kept
    assert regions["start_us"].is_monotonic_increasing
