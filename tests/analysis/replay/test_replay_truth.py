"""Replayed fixes against the same fixes applied by hand and timed without the profiler.

Every fix of `tests/data/gpu_h200_truth/ground_truth.json` that maps onto a named replay fix
(`FIX_OF`) is replayed on the workload's run folder, the host costs first scaled
to the untraced baseline iteration (`fit_host_scale`), and its predicted speedup (median,
min and max over the profiled steps) is pinned here. docs/gpu-validation.md holds the same
numbers beside the measurements. The goal (median |error| <= 10%, none over 25%) is not met
(median 13.7%, worst 82%);
the tests pin where the replay stands, per group: the workloads the model was changed on
(`TUNED`) and those only evaluated (`HELD_OUT`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import autoprof
from autoprof.analysis.metrics.replay import ScaleHost, Spread, fit_host_scale, predict_speedups
from autoprof.analysis.metrics.replay.fixes import FixName, fix_changes

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
# the first recording, and four workloads recorded after the model was written
TRUTHS = (DATA / "gpu_h200_truth", DATA / "gpu_h200_truth_heldout")
FIX_OF: dict[str, FixName] = {
    "cuda_graph": "cuda-graph",
    "remove": "remove-sync",
    "keep_on_gpu": "remove-sync",
    "where": "remove-sync",
    "mask_weights": "remove-sync",
    "pinned_async": "remove-sync",
    "graph_without_sync": "sync-free-cuda-graph",
    "workers4_pin_nonblocking": "loader-workers",
    "workers8_pin_nonblocking": "loader-workers",
    "pin_nonblocking": "pin-memory",
    "no_loader": "no-loader",
}
NOT_MODELLED = ("adamw_fused", "compile", "compile_reduce_overhead", "addmm", "every_10")
TUNED = ("sync_item", "sync_mask", "mlp_loader_w0", "cnn_loader_w4", "compiled_mlp", "seed_64",
         "gpt2_large")
HELD_OUT = ("sync_cpu", "sync_nonzero", "sync_print", "mlp_loader_w4_pin", "cnn_loader_w0_pin",
            "mlp_loader_inside", "seed_4096", "gpt2_tiny", "graph_program", "two_streams",
            "infer_b1", "infer_large")


@dataclass(frozen=True)
class Pair:
    """One fix on one workload: the replayed prediction beside the measurement."""

    workload: str
    fix: str  # the ground truth's name
    named: FixName
    predicted: Spread
    measured: float
    measured_lo: float
    measured_hi: float

    @property
    def error(self) -> float:
        """(predicted median - measured) / measured."""
        return (self.predicted.median - self.measured) / self.measured


@cache
def truth() -> dict[str, Any]:
    """Every workload of both recordings, each with the folder its run lies under."""
    out: dict[str, Any] = {}
    for root in TRUTHS:
        for name, w in json.loads((root / "ground_truth.json").read_text())["workloads"].items():
            out[name] = {**w, "root": root}
    return out


@cache
def _run(workload: str) -> autoprof.Run:
    w = truth()[workload]
    return autoprof.load(w["root"] / w["record"]["run"])


@cache
def host_scale(workload: str) -> float:
    """The ScaleHost factor that brings the replayed step to the untraced baseline."""
    gt = truth()[workload]["ground_truth"]
    baseline_us = 1000.0 * gt["stats"]["baseline"]["iter_ms"]["median"]
    return fit_host_scale(_run(workload).events, baseline_us)


def pairs(workload: str) -> list[Pair]:
    """Every modelled fix of `workload`, predicted and measured."""
    gt = truth()[workload]["ground_truth"]
    run = _run(workload)
    base = [ScaleHost(host_scale(workload))]
    out = []
    for fix, sp in gt["speedups"].items():
        if fix not in FIX_OF:
            continue
        got = predict_speedups(run.events, fix_changes(FIX_OF[fix], run.name), baseline=base)
        it = sp["iter"]
        out.append(Pair(workload, fix, FIX_OF[fix], got, float(it["speedup"]),
                        float(it["lo"]), float(it["hi"])))
    return out


def summary(errors: list[float]) -> tuple[float, float]:
    """(median |error|, largest |error|)."""
    arr = np.abs(np.asarray(errors, float))
    return float(np.median(arr)), float(arr.max())


def best_measured(workload: str) -> str:
    """The fix with the largest measured iteration speedup of every fix tried."""
    sp = truth()[workload]["ground_truth"]["speedups"]
    best: str = max(sp, key=lambda f: float(sp[f]["iter"]["speedup"]))
    return best


def top_predicted(workload: str) -> str | None:
    """The modelled fix with the largest predicted speedup (None: no modelled fix)."""
    got = pairs(workload)
    return max(got, key=lambda p: p.predicted.median).fix if got else None


# (workload, fix, predicted median, min, max over steps)
PINNED = [
    ("sync_item", "remove", 1.01, 1.00, 1.01),
    ("sync_item", "keep_on_gpu", 1.01, 1.00, 1.01),
    ("sync_item", "pinned_async", 1.01, 1.00, 1.01),
    ("sync_item", "graph_without_sync", 2.26, 1.78, 2.38),
    ("sync_mask", "remove", 1.00, 1.00, 1.00),
    ("sync_mask", "where", 1.00, 1.00, 1.00),
    ("sync_mask", "graph_without_sync", 1.49, 1.45, 1.60),
    ("mlp_loader_w0", "workers4_pin_nonblocking", 5.31, 4.92, 6.52),
    ("mlp_loader_w0", "pin_nonblocking", 1.01, 1.01, 1.01),
    ("mlp_loader_w0", "no_loader", 5.39, 4.98, 6.61),
    ("mlp_loader_w0", "cuda_graph", 1.22, 1.19, 1.24),
    ("cnn_loader_w4", "workers8_pin_nonblocking", 1.18, 1.16, 1.53),
    ("cnn_loader_w4", "pin_nonblocking", 1.03, 1.02, 1.03),
    ("cnn_loader_w4", "no_loader", 1.29, 1.26, 1.67),
    ("cnn_loader_w4", "cuda_graph", 2.05, 1.73, 2.54),
    ("compiled_mlp", "cuda_graph", 9.91, 9.14, 10.18),
    ("seed_64", "cuda_graph", 1.96, 1.68, 2.18),
    ("gpt2_large", "cuda_graph", 1.05, 1.04, 1.05),
    ("sync_cpu", "remove", 1.01, 1.01, 1.01),
    ("sync_cpu", "pinned_async", 1.01, 1.01, 1.01),
    ("sync_cpu", "graph_without_sync", 2.19, 2.16, 2.21),
    ("sync_nonzero", "remove", 1.00, 1.00, 1.00),
    ("sync_nonzero", "mask_weights", 1.00, 1.00, 1.00),
    ("sync_nonzero", "graph_without_sync", 2.89, 2.86, 3.56),
    ("sync_print", "remove", 1.01, 1.01, 1.01),
    ("sync_print", "pinned_async", 1.01, 1.01, 1.01),
    ("sync_print", "graph_without_sync", 2.63, 2.62, 2.80),
    ("mlp_loader_w4_pin", "workers8_pin_nonblocking", 1.06, 1.06, 1.13),
    ("mlp_loader_w4_pin", "no_loader", 1.07, 1.06, 1.14),
    ("mlp_loader_w4_pin", "cuda_graph", 4.65, 3.24, 5.18),
    ("cnn_loader_w0_pin", "workers4_pin_nonblocking", 3.04, 2.88, 3.15),
    ("cnn_loader_w0_pin", "no_loader", 3.05, 2.89, 3.16),
    ("cnn_loader_w0_pin", "cuda_graph", 1.47, 1.20, 1.49),
    ("mlp_loader_inside", "workers4_pin_nonblocking", 5.06, 4.58, 5.15),
    ("mlp_loader_inside", "no_loader", 5.10, 4.60, 5.18),
    ("mlp_loader_inside", "cuda_graph", 1.25, 1.24, 1.25),
    ("seed_4096", "cuda_graph", 1.02, 1.02, 1.34),
    ("two_streams", "cuda_graph", 6.29, 4.13, 6.56),
    ("infer_b1", "cuda_graph", 4.71, 3.54, 5.73),
    ("infer_large", "cuda_graph", 1.01, 1.00, 1.01),
]


@pytest.mark.parametrize(("workload", "fix", "median", "low", "high"), PINNED,
                         ids=[f"{w}-{f}" for w, f, *_ in PINNED])
def test_each_replayed_fix_is_pinned(workload: str, fix: str, median: float, low: float,
                                     high: float) -> None:
    got = {p.fix: p.predicted for p in pairs(workload)}[fix]
    assert (got.median, got.low, got.high) == pytest.approx((median, low, high), abs=0.011)


def test_every_modelled_fix_is_pinned() -> None:
    listed = {(w, f) for w, f, *_ in PINNED}
    assert listed == {(p.workload, p.fix) for w in TUNED + HELD_OUT for p in pairs(w)}


@pytest.mark.parametrize(("group", "median_pct", "max_pct"), [
    (TUNED, 14.9, 45.8),
    (HELD_OUT, 13.4, 82.2),
    (TUNED + HELD_OUT, 13.7, 82.2),
])
def test_the_errors_against_the_fixes_timed_by_hand(group: tuple[str, ...], median_pct: float,
                                                    max_pct: float) -> None:
    med, worst = summary([p.error for w in group for p in pairs(w)])
    assert (100 * med, 100 * worst) == pytest.approx((median_pct, max_pct), abs=0.1)


def test_the_top_prediction_is_the_best_fix_tried() -> None:
    """The best fix measured is the top predicted one in 14 of 19 workloads; the other five
    are best fixed by what the replay does not model: fused AdamW on gpt2_large (1.03x, the
    graph 0.99x), compile on seed_4096 (1.18x), reduce-overhead on gpt2_tiny (2.89x, its
    hand-made graph failed), compile inside the graph on graph_program, channels-last bf16
    on infer_large."""
    hits = [w for w in TUNED + HELD_OUT if top_predicted(w) == best_measured(w)]
    assert len(hits) == 14, hits
