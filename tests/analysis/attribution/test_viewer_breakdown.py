"""The Overview shows the opportunities and a stacked bar per step; the Timeline colours the
idle GPU stretches by host bucket (AppTest, on the H200 seed run at 64)."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.apptest import chart_data, charts, open_app, visit

import autoprof
from autoprof.units import fmt_pct, fmt_us
from autoprof.viewer._text import md_escape

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
    # the bars (and their legend) hold exactly the buckets that have time in this run
    (run_dir,) = (tmp_path / "seed_n64").iterdir()
    per_step = autoprof.load(run_dir).breakdown()
    with_time = {c.removesuffix("_us") for c in per_step.columns
                 if c.endswith("_us") and c not in ("step_us", "start_us", "end_us",
                                                    "autoprof_us", "between_calls_us")
                 and per_step[c].sum() > 0}
    assert set(bars["bucket"]) == with_time
    assert {"gpu_compute", "host_launch", "host_untraced"} <= with_time
    assert len(set(bars["label"])) == 3  # one bar per profiled step

    visit(at, "timeline")
    gaps = [d for d in chart_data(at) if "bucket" in d.columns and "row" in d.columns]
    assert gaps and {"host_launch", "host_untraced"} <= set(gaps[0]["bucket"])


TRUTH = Path(__file__).resolve().parents[2] / "data" / "gpu_h200_truth" / "runs"


def test_overview_shows_input_bound_and_the_time_between_calls(tmp_path, monkeypatch):
    shutil.copytree(TRUTH / "mlp_loader_w0", tmp_path / "mlp_loader_w0")
    at = visit(open_app(tmp_path, monkeypatch), "overview")
    banner = [w.value for w in at.warning]
    want = md_escape("80% of each iteration passes between calls, in DataLoader.__next__")
    assert any(v.startswith(f"**input-bound**: {want}") or
               v.startswith(f"**{md_escape('input-bound')}**: {want}") for v in banner), banner
    captions = [c.value for c in at.caption]
    between = next(c for c in captions if "Between calls" in c)
    bd = autoprof.load(next((tmp_path / "mlp_loader_w0").iterdir())).summary()["breakdown"]
    share = fmt_pct(bd["between_calls_pct"])
    assert 78 < bd["between_calls_pct"] < 83
    assert md_escape(f"{fmt_us(bd['between_calls_us'])} per step ({share} of the step)") in between
    assert md_escape("autoprof's own 17.7 µs per step is left out") in between
    bars = next(d for d in chart_data(at) if "between_calls_us" in d.columns)
    assert bars["between_calls_us"].max() > 10  # ms: the chart's unit for these steps
