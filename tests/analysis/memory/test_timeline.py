"""The timeline thinned for charts keeps each device's extremes; the empty timeline's columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.memory import TIMELINE_COLUMNS, plot_points, timeline_of


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
