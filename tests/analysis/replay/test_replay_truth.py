"""Replayed fixes against the same fixes applied by hand and timed without the profiler.

`tests/data/gpu_h200_truth/` holds H200 recordings of user workloads and, per workload, the
baseline iteration and each fix timed interleaved with CUDA events in profiler-free
processes (`ground_truth.json`: `speedups[fix]["iter"]["speedup"]`). Each fix below maps
onto one replay change; the host costs are first scaled to the untraced baseline iteration
(`fit_host_scale`). Measured errors (predicted vs measured): sync_mask remove -5.5%,
compiled_mlp cuda_graph +7.0%, gpt2_large cuda_graph +5.7%, mlp_loader_inside cuda_graph
-13.4%, cnn_loader_w4 workers+pin -7.5%, mlp_loader_w0 workers+pin -12.0%, seed_4096
cuda_graph +14.2%, seed_64 cuda_graph +15.5%. Fixes whose effect the replay does not model
yet (a whole loader removed, syncs removed where the profiled host hides the overlap, a
graph over a sync-free step) are not held here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoprof
from autoprof.analysis.metrics.replay import (
    Change,
    CudaGraph,
    NonBlockingCopies,
    OverlapBetweenCalls,
    RemoveSync,
    ScaleHost,
    fit_host_scale,
    predict_speedups,
)

TRUTH = Path(__file__).resolve().parents[3] / "tests" / "data" / "gpu_h200_truth"
MAX_ERROR = 0.25


def _changes(fix: str, call: str) -> list[Change]:
    return {
        "remove": [RemoveSync()],
        "cuda_graph": [CudaGraph(call)],
        "workers": [OverlapBetweenCalls(call), NonBlockingCopies()],
    }[fix]


@pytest.mark.parametrize(("workload", "fix", "key"), [
    ("sync_mask", "remove", "remove"),
    ("compiled_mlp", "cuda_graph", "cuda_graph"),
    ("gpt2_large", "cuda_graph", "cuda_graph"),
    ("mlp_loader_inside", "cuda_graph", "cuda_graph"),
    ("cnn_loader_w4", "workers", "workers8_pin_nonblocking"),
    ("mlp_loader_w0", "workers", "workers4_pin_nonblocking"),
    ("seed_4096", "cuda_graph", "cuda_graph"),
    ("seed_64", "cuda_graph", "cuda_graph"),
])
def test_a_replayed_fix_against_the_fix_timed_by_hand(workload: str, fix: str,
                                                      key: str) -> None:
    truth = json.loads((TRUTH / "ground_truth.json").read_text())["workloads"][workload]
    run = autoprof.load(TRUTH / truth["record"]["run"])
    baseline_us = 1000.0 * truth["ground_truth"]["stats"]["baseline"]["iter_ms"]["median"]
    measured = truth["ground_truth"]["speedups"][key]["iter"]["speedup"]
    factor = fit_host_scale(run.events, baseline_us)
    predicted = predict_speedups(run.events, _changes(fix, run.name),
                                 baseline=[ScaleHost(factor)]).median
    assert abs(predicted - measured) / measured <= MAX_ERROR, (predicted, measured)
