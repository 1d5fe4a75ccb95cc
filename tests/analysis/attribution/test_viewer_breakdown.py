"""The Overview shows the opportunities and a stacked bar per step; the Timeline colours the
idle GPU stretches by host bucket (AppTest, on the H200 seed run at 64)."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.apptest import chart_data, charts, open_app, visit

SEED = Path(__file__).resolve().parents[2] / "data" / "gpu_h200" / "seed_n64"


def test_overview_and_timeline_show_the_breakdown(tmp_path, monkeypatch):
    shutil.copytree(SEED, tmp_path / "seed_n64")
    at = visit(open_app(tmp_path, monkeypatch), "overview")
    table = next(d.value for d in at.dataframe if "cause" in d.value.columns)
    assert table["cause"].iloc[0] == "host_launch"
    assert "aten::matmul" in table["where"].iloc[0]
    titles = [c.get("title") for c in charts(at)]
    assert "Where the time goes, per step" in titles
    bars = next(d for d in chart_data(at) if "bucket" in d.columns and "label" in d.columns)
    assert set(bars["bucket"]) == {"gpu_compute", "gpu_memory", "gpu_communication",
                                   "host_launch", "host_sync", "host_cpu_work", "host_untraced"}
    assert len(set(bars["label"])) == 3  # one bar per profiled step

    visit(at, "timeline")
    gaps = [d for d in chart_data(at) if "bucket" in d.columns and "row" in d.columns]
    assert gaps and {"host_launch", "host_untraced"} <= set(gaps[0]["bucket"])
