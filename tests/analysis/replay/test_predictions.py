"""Each opportunity as one named fix's replayed prediction, on the H200 truth recordings:
the number the what-if reads, its spread over steps, the hint of the same fix, the time
between calls as an opportunity, and a gap that exists only under the profiler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import autoprof
from autoprof.analysis.diagnose.predictions import FIX_HINTS, with_predictions
from autoprof.analysis.report.text import render_summary

TRUTH = Path(__file__).resolve().parents[3] / "tests" / "data" / "gpu_h200_truth"


def _run(workload: str) -> autoprof.Run:
    truth = json.loads((TRUTH / "ground_truth.json").read_text())["workloads"][workload]
    return autoprof.load(TRUTH / truth["record"]["run"])


def _opps(workload: str) -> list[dict[str, Any]]:
    return list(_run(workload).analysis.opportunities)


def test_a_loader_in_the_callers_loop_is_an_opportunity_with_its_fix() -> None:
    top = next(o for o in _opps("mlp_loader_w0") if o["cause"] == "between_calls")
    assert top["cause"] == "between_calls" and top["fix"] == "loader-workers"
    assert top["where"][0]["name"] == "DataLoader.__next__"
    assert top["hint"] == FIX_HINTS["loader-workers"]
    # measured by hand: 4 workers, pinned memory, non_blocking copies: 5.60x
    assert top["predicted_speedup"] == pytest.approx(5.31, abs=0.02)
    spread = top["predicted_spread"]
    assert spread["min"] <= spread["median"] <= spread["max"]


def test_launch_overhead_predicts_the_cuda_graph_and_its_hint_names_it() -> None:
    top = _opps("compiled_mlp")[0]
    assert (top["cause"], top["fix"]) == ("host_launch", "cuda-graph")
    assert "CUDA graph" in top["hint"]
    assert top["predicted_speedup"] > top["max_speedup"]  # one fix removes several buckets


def test_a_sync_whose_gain_exists_only_under_the_profiler_is_no_fix() -> None:
    """sync_item: removing the .item() measured 0.95x by hand; replayed at the untraced
    call's pace the sync gains nothing, so no fix is offered and the hint says why."""
    sync = next(o for o in _opps("sync_item") if o["cause"] == "host_sync")
    assert sync["fix"] is None
    assert "exists only under the profiler" in sync["hint"]


def test_the_order_by_time_is_kept_with_the_time_between_calls_last() -> None:
    opps = _opps("mlp_loader_w0")
    assert opps[-1]["cause"] == "between_calls"
    times = [o["us_per_step"] for o in opps[:-1]]
    assert times == sorted(times, reverse=True)


def test_the_text_shows_the_prediction_beside_the_bound() -> None:
    text = render_summary(_run("mlp_loader_w0").summary())
    assert "loader-workers predicted 5.31x (" in text
    assert "over steps), up to" in text


def test_a_trace_without_gpu_work_keeps_its_bounds() -> None:
    run = _run("sync_item")
    cpu_only = run.events[~run.events["is_gpu_work"]]
    opps = [{"cause": "host_launch", "hint": "h", "us_per_step": 1.0}]
    assert with_predictions(opps, cpu_only, run.name, None) == opps
