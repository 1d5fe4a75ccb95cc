"""The loop around the function on the H200 truth recordings: the time between two calls is
the caller's (a DataLoader in the caller's loop), named from the trace, never autoprof's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.store import committed
from support.truth import measured_speedup, within_goal

import autoprof
from autoprof.analysis.metrics.replay.fixes import predict_fix
from autoprof.analysis.metrics.replay.loop import _UserRows, input_bound, loop_split

TRUTH = Path(__file__).resolve().parents[3] / "tests" / "data" / "gpu_h200_truth"


def _run(workload: str) -> autoprof.Run:
    truth = json.loads((TRUTH / "ground_truth.json").read_text())["workloads"][workload]
    return committed.run(TRUTH / truth["record"]["run"])


@pytest.mark.parametrize(("workload", "low", "high"), [
    ("mlp_loader_w0", 78.2, 82.8),  # num_workers=0 in the caller's loop
    ("cnn_loader_w0_pin", 66.3, 68.8),
])
def test_a_loader_in_the_callers_loop_is_input_bound(workload: str, low: float,
                                                     high: float) -> None:
    run = _run(workload)
    loop = loop_split(run.events, run.name)
    assert (loop.between_pct.low, loop.between_pct.high) == pytest.approx((low, high), abs=0.1)
    assert (loop.steps["autoprof_us"] == 0).all()  # the loop is the user's
    assert loop.where.iloc[0]["name"] == "DataLoader.__next__"
    verdict = input_bound(loop)
    assert verdict is not None
    assert verdict.reason.startswith(f"{loop.between_pct.median:.0f}% of each iteration "
                                     "passes between calls, in DataLoader.__next__")
    assert "mixed" not in verdict.reason


@pytest.mark.parametrize("workload", ["mlp_loader_inside", "mlp_loader_w4_pin",
                                      "cnn_loader_w4", "sync_item"])
def test_a_loader_inside_the_call_or_keeping_up_is_not(workload: str) -> None:
    run = _run(workload)
    loop = loop_split(run.events, run.name)
    assert input_bound(loop) is None
    assert loop.between_pct.high < 35.0


def test_steps_that_straddle_the_threshold_say_a_rerun_could_flip_it() -> None:
    run = _run("mlp_loader_w0")
    loop = loop_split(run.events, run.name)
    steps = loop.steps.copy()
    steps.loc[0, "between_pct"] = 40.0
    verdict = input_bound(type(loop)(steps, loop.where))
    assert verdict is not None
    assert "mixed across steps: 40-83% between calls; a rerun could give another verdict" in \
        verdict.reason


def test_the_loader_fix_is_predicted_with_its_spread() -> None:
    run = _run("mlp_loader_w0")
    got = predict_fix(run.events, "loader-workers", run.name)
    assert got["fix"] == "loader-workers"
    spread = got["predicted_spread"]
    assert got["predicted_speedup"] == spread["median"]
    assert spread["min"] <= spread["q1"] <= spread["median"] <= spread["q3"] <= spread["max"]
    # 4 workers fetch no faster than the 11 ms fetch over 4: the step's floor; against the
    # fix timed by hand
    measured = measured_speedup("gpu_h200_truth", "mlp_loader_w0", "workers4_pin_nonblocking")
    assert within_goal(spread["median"], measured), (spread, measured)


def test_a_call_that_is_not_in_the_trace_is_named() -> None:
    run = _run("sync_item")
    with pytest.raises(ValueError, match="no host row named 'nope'"):
        loop_split(run.events, "nope")


@pytest.mark.parametrize("workload", ["mlp_loader_w0", "cnn_loader_w0_pin", "mlp_loader_inside"])
def test_the_time_between_calls_is_named_at_once_as_step_by_step(
        workload: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The steps' outermost rows found at once name the same time, in the same order, as a
    search per step."""
    run = _run(workload)
    at_once = loop_split(run.events, run.name).where

    def step_by_step(self: _UserRows, lo: np.ndarray, hi: np.ndarray, between: list[float],
                     where_us: dict[str, float]) -> None:
        for k in range(len(lo)):
            self.name_between(lo[k], hi[k], between[k], where_us)

    monkeypatch.setattr(_UserRows, "name_all", step_by_step)
    each = loop_split(run.events, run.name).where
    assert len(at_once) > 1
    assert at_once["name"].tolist() == each["name"].tolist()
    assert at_once["us"].tolist() == each["us"].tolist()
