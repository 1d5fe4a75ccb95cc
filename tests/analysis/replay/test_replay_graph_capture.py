"""What capturing a call takes, replayed on small events tables: the call's syncs gone (a
pageable batch copy's kept), and a capturable optimizer's added kernels; times in us. The
per-parameter Adam loop found, and named in the graph's hint on a recorded step."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.attrbuild import Trace
from support.store import committed

from autoprof.analysis.diagnose.predictions import PER_PARAMETER_NOTE
from autoprof.analysis.metrics.replay import build_graph, replay_step
from autoprof.analysis.metrics.replay.capturable import (
    host_count_steps,
    per_parameter_steps,
    tiny_kernel_us,
)
from autoprof.analysis.metrics.replay.changes import GRAPH_KERNEL_GAP_US, CudaGraph
from autoprof.analysis.metrics.replay.fixes import graph_drops_syncs

ROOT = Path(__file__).resolve().parents[3]
HELDOUT = ROOT / "benchmarks" / "validation" / "data" / "gpu_h100_heldout" / "runs"
TRUTH = ROOT / "tests" / "data" / "gpu_h200_truth" / "runs"


def syncing_call() -> Trace:
    """A 500 us kernel, `.item()`'s stream sync waiting for it, 200 us of host work, then a
    3 us kernel, all inside the decorated call."""
    return (Trace().step(1, 0, 720).region("step_fn", 0, 715)
            .launch(0, 5, 6, 500)
            .cpu("aten::item", 8, 504)
            .cpu("cudaStreamSynchronize", 10, 500, "cuda_runtime")
            .cpu("aten::cpu_work", 510, 200).launch(705, 5, 711, 3))


def pageable_batch_copy() -> Trace:
    """`x.to(device)` from pageable memory (a copy call, then the copy's own stream sync,
    under one `aten::copy_`), host work, a kernel."""
    return (Trace().step(1, 0, 200).region("step_fn", 0, 195)
            .cpu("aten::copy_", 0, 60)
            .launch(1, 5, 10, 35, kernel="Memcpy HtoD (Pageable -> Device)",
                    gpu_cat="gpu_memcpy", api="cudaMemcpyAsync")
            .cpu("cudaStreamSynchronize", 7, 50, "cuda_runtime")
            .cpu("aten::cpu_work", 60, 100).launch(160, 5, 166, 10))


def test_a_graph_of_a_call_that_syncs_goes_without_the_sync() -> None:
    ev = syncing_call().frame()
    assert graph_drops_syncs(ev, "step_fn")
    kept = replay_step(ev, 1, [CudaGraph("step_fn", sync_free=False)]).step_us
    free = replay_step(ev, 1, [CudaGraph("step_fn")]).step_us
    assert replay_step(ev, 1).step_us == pytest.approx(720.0)
    # kept: the host waits for the long kernel and wakes before the graph's second part;
    # without the sync the last kernel queues right behind it
    assert kept == pytest.approx(512.52, abs=0.01)
    assert free == pytest.approx(506.8, abs=0.01)


def test_a_pageable_batch_copys_own_sync_stays() -> None:
    ev = pageable_batch_copy().frame()
    assert not graph_drops_syncs(ev, "step_fn")
    assert replay_step(ev, 1, [CudaGraph("step_fn")]).step_us == pytest.approx(
        replay_step(ev, 1, [CudaGraph("step_fn", sync_free=False)]).step_us)


def optimizer_step(children_launch: bool) -> Trace:
    """A 100 us kernel, then AdamW's step: the step count's `_foreach_add_` over three
    per-tensor `aten::add_` (on the host, or each launching a kernel), then two foreach ops
    with a 2 us and a 100 us kernel."""
    t = Trace().step(1, 0, 300).region("train", 0, 295).launch(1, 4, 6, 100) \
        .region("Optimizer.step#AdamW.step", 110, 150).cpu("aten::_foreach_add_", 115, 30)
    for i in range(3):
        t.cpu("aten::add_", 117 + 8 * i, 6)
        if children_launch:
            t.launch(118 + 8 * i, 2, 130 + 8 * i, 1)
    return t.cpu("aten::_foreach_mul_", 150, 20).launch(155, 5, 161, 2) \
        .cpu("aten::_foreach_addcdiv_", 175, 20).launch(180, 5, 186, 100)


def test_a_capturable_optimizers_kernels_join_the_graph() -> None:
    ev = optimizer_step(children_launch=False).frame()
    g = build_graph(ev)
    (step,) = host_count_steps(g)
    assert step.extra_kernels == 2 * 3 + 8  # beta1 ** step, beta2 ** step per tensor; 8 more
    assert tiny_kernel_us(g) == pytest.approx(21.6)  # the 10th percentile of 100, 2, 100
    without = replay_step(ev, 1, [CudaGraph("train", capturable_optimizer=False)]).step_us
    graph = replay_step(ev, 1, [CudaGraph("train")]).step_us
    # the GPU bounds the graph: each added kernel adds its duration and the graph's gap
    assert graph - without == pytest.approx(14 * (21.6 + GRAPH_KERNEL_GAP_US), abs=0.01)


def test_step_counts_on_the_device_add_nothing() -> None:
    ev = optimizer_step(children_launch=True).frame()
    g = build_graph(ev)
    assert host_count_steps(g) == []
    assert replay_step(ev, 1, [CudaGraph("train")]).step_us == pytest.approx(
        replay_step(ev, 1, [CudaGraph("train", capturable_optimizer=False)]).step_us)


def _optimizer_step(inner: str) -> Trace:
    """An Adam step region holding one op (`inner`) that launches a kernel."""
    return (Trace().step(1, 0, 100).region("step_fn", 0, 95)
            .region("Optimizer.step#Adam.step", 10, 80)
            .cpu(inner, 12, 20).launch(13, 5, 20, 3))


@pytest.mark.parametrize(("inner", "per_parameter"), [
    ("aten::add_", True), ("aten::_foreach_add_", False), ("aten::_fused_adam_", False)])
def test_a_step_without_foreach_or_fused_ops_is_the_per_parameter_loop(
        inner: str, per_parameter: bool) -> None:
    assert per_parameter_steps(_optimizer_step(inner).frame()) is per_parameter


def test_no_adam_step_is_no_per_parameter_loop() -> None:
    assert not per_parameter_steps(syncing_call().frame())


def test_the_graph_hint_names_the_form_its_estimate_replays() -> None:
    per_parameter = next(committed.summary(run)["opportunities"] for run in
                         (HELDOUT / "adamw_foreach_false").iterdir())
    foreach = next(committed.summary(run)["opportunities"] for run in
                   (TRUTH / "gpt2_tiny").iterdir())
    graph = [o for o in per_parameter if o.get("fix") == "cuda-graph"]
    assert graph and PER_PARAMETER_NOTE in graph[0]["hint"]
    assert not any(PER_PARAMETER_NOTE in str(o.get("hint")) for o in foreach)
