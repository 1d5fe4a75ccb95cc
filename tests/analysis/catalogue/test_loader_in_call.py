"""A DataLoader without workers read inside the call (diagnose/loader_in_call.py): found from
its fetch spans inside the call, offered as loader workers and replayed; held on hand-built
steps and, on the H200, to the workers fix timed by hand without the profiler."""

from __future__ import annotations

import json
from pathlib import Path

from support.attrbuild import Trace
from support.store import committed

from autoprof.analysis.diagnose.loader_in_call import MIN_FETCH_PCT, fetch_in_call

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_h200_truth"
FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
WORKER_FETCH = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _trace(fetch_us: float, name: str = FETCH, inside: bool = True) -> Trace:
    """Three steps of 1000 us, the call `train` 900 us of each; the fetch `fetch_us` at the
    call's start (inside it) or before it (between calls)."""
    tr = Trace()
    for n in (1, 2, 3):
        t0 = 1000.0 * (n - 1)
        tr.step(n, t0, 1000).region("train", t0 + 100, 900)
        tr.cpu(name, t0 + (110 if inside else 5), fetch_us, cat="user_annotation")
        tr.launch(t0 + 110 + fetch_us + 10, 5, t0 + 130 + fetch_us, 50)
    return tr


def test_a_fetch_inside_the_call_is_offered_with_its_time() -> None:
    opp = fetch_in_call(_trace(300.0).frame(), "train", 1000.0, "the hint")
    assert opp is not None and opp["cause"] == "loader_in_call"
    assert opp["us_per_step"] == 300.0 and opp["pct_of_step"] == 30.0
    assert opp["where"][0]["name"] == FETCH and opp["hint"] == "the hint"
    assert opp["max_speedup"] == 1000.0 / 700.0


def test_a_small_fetch_or_one_outside_the_call_or_from_workers_is_not() -> None:
    small = 1000.0 * MIN_FETCH_PCT / 100.0 - 10.0
    assert fetch_in_call(_trace(small).frame(), "train", 1000.0, "h") is None
    assert fetch_in_call(_trace(90.0, inside=False).frame(), "train", 1000.0, "h") is None
    assert fetch_in_call(_trace(300.0, WORKER_FETCH).frame(), "train", 1000.0, "h") is None


def _measured(workload: str, fix: str) -> float:
    truth = json.loads((DATA / "ground_truth.json").read_text())["workloads"][workload]
    return float(truth["ground_truth"]["speedups"][fix]["iter"]["speedup"])


def test_the_h200_step_that_reads_its_own_batch_is_offered_workers_inside_its_interval(
        ) -> None:
    summary = committed.summary(next((DATA / "runs" / "mlp_loader_inside").iterdir()))
    opp = next(o for o in summary["opportunities"] if o["cause"] == "loader_in_call")
    assert opp["fix"] == "loader-workers"
    interval = opp["predicted_interval"]
    measured = _measured("mlp_loader_inside", "workers4_pin_nonblocking")
    assert interval["low"] <= measured <= interval["high"], (opp["predicted_speedup"], measured)


def test_a_loader_in_the_callers_loop_keeps_its_between_calls_opportunity() -> None:
    summary = committed.summary(next((DATA / "runs" / "mlp_loader_w0").iterdir()))
    causes = [o["cause"] for o in summary["opportunities"]]
    assert "between_calls" in causes and "loader_in_call" not in causes
