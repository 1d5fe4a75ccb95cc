"""Replays of small events tables whose answer is known by hand (times in microseconds)."""

from __future__ import annotations

import pytest
from support.attrbuild import Ev, Trace

from autoprof.analysis.metrics.replay import (
    CudaGraph,
    FasterKernels,
    NonBlockingCopies,
    OverlapBetweenCalls,
    RemoveSync,
    ScaleHost,
    build_graph,
    fit_host_scale,
    predict_speedup,
    predict_speedups,
    replay_error,
    replay_step,
    replay_steps,
)
from autoprof.analysis.metrics.replay.changes import COPY_BANDWIDTH_SHARE, input_copy_us


def host_bound() -> Trace:
    """100 us of host time launching two 2 us kernels (1 us launch latency)."""
    return (Trace().step(1, 0, 100)
            .launch(10, 5, 16, 2)
            .launch(50, 5, 56, 2))


def test_host_bound_step_replays_as_measured_and_scales_with_the_host() -> None:
    ev = host_bound().frame()
    r = replay_step(ev, 1)
    assert r.measured_step_us == pytest.approx(100.0)
    assert r.step_us == pytest.approx(100.0)
    assert r.gpu_busy_us == pytest.approx(4.0)
    assert r.host_busy_us == pytest.approx(100.0)
    # every host cost halved: 50 us; the kernels keep their 1 us latency
    assert replay_step(ev, 1, [ScaleHost(0.5)]).step_us == pytest.approx(50.0)
    assert predict_speedup(ev, 1, [ScaleHost(0.5)]) == pytest.approx(2.0)
    # a faster kernel changes nothing on a host-bound step
    assert predict_speedup(ev, 1, [FasterKernels(4.0)]) == pytest.approx(1.0)


def gpu_bound() -> Trace:
    """Two 100 us kernels queued back to back (1 us apart) behind a 20 us host step."""
    return (Trace().step(1, 0, 20)
            .launch(2, 3, 6, 100, kernel="gemm_a")
            .launch(6, 3, 107, 100, kernel="gemm_b"))


def test_gpu_bound_step_ends_with_its_gpu_work_and_follows_kernel_speed() -> None:
    ev = gpu_bound().frame()
    assert replay_step(ev, 1).step_us == pytest.approx(207.0)
    # kernel 1: 6..56; kernel 2: 1 us after it, 57..107
    assert replay_step(ev, 1, [FasterKernels(2.0)]).step_us == pytest.approx(107.0)
    # only the second kernel twice as fast: 6..106, then 107..157
    assert replay_step(ev, 1, [FasterKernels(2.0, kernel="gemm_b")]).step_us == \
        pytest.approx(157.0)
    # the host is not what bounds it: a 10x faster host only starts the first kernel 4.5 us
    # earlier (its launch ends at 0.5 instead of 5)
    assert replay_step(ev, 1, [ScaleHost(0.1)]).step_us == pytest.approx(202.5)


def sync_in_the_middle() -> Trace:
    """A 500 us kernel, a stream sync that waits for it (ends 4 us after it), then 200 us of
    host work that launches nothing."""
    return (Trace().step(1, 0, 710)
            .launch(0, 5, 6, 500)
            .cpu("aten::item", 8, 504)
            .cpu("cudaStreamSynchronize", 10, 500, "cuda_runtime")
            .cpu("aten::cpu_work", 510, 200))


@pytest.mark.parametrize("calibration", ["median", "per_item"])
def test_removing_a_sync_saves_the_host_time_the_gpu_then_overlaps(calibration: str) -> None:
    ev = sync_in_the_middle().frame()
    base = replay_step(ev, 1, calibration=calibration)  # type: ignore[arg-type]
    assert base.step_us == pytest.approx(710.0)
    # without the wait the 200 us of host work (and the 4 us wake-up) run under the kernel:
    # the step ends with the kernel, at 506
    free = replay_step(ev, 1, [RemoveSync("aten::item")],
                       calibration=calibration)  # type: ignore[arg-type]
    assert free.step_us == pytest.approx(506.0)
    assert base.step_us - free.step_us == pytest.approx(200.0 + 4.0)
    assert replay_step(ev, 1, [RemoveSync()]).step_us == pytest.approx(506.0)
    # a sync under another op is left alone
    assert replay_step(ev, 1, [RemoveSync("aten::nonzero")]).step_us == pytest.approx(710.0)


def two_streams() -> Trace:
    """Kernel A on stream 7 (3..103); stream 8 waits for it through an event; kernel B on
    stream 8 starts right after A (103.5..113.5)."""
    return (Trace().step(1, 0, 20)
            .launch(0, 2, 3, 100, kernel="kernel_a", stream=7)
            .cpu("cudaEventRecord", 3, 1, "cuda_runtime")
            .cpu("cudaStreamWaitEvent", 5, 1, "cuda_runtime")
            .launch(7, 2, 103.5, 10, kernel="kernel_b", stream=8))


def test_an_event_wait_makes_the_second_stream_follow_the_first() -> None:
    ev = two_streams().frame()
    g = build_graph(ev)
    b = next(i for i in range(g.n_items) if g.item_deps[i])
    assert list(g.item_deps[b]) == [b - 1]  # B waits for A
    assert replay_step(ev, 1, calibration="per_item").step_us == pytest.approx(113.5)
    # A twice as fast: 3..53, B 0.5 us after it (as measured): 53.5..63.5
    assert replay_step(ev, 1, [FasterKernels(2.0, kernel="kernel_a")]).step_us == \
        pytest.approx(63.5)
    assert replay_step(ev, 1).step_us == pytest.approx(113.5)


def launch_bound() -> Trace:
    """A region `fwd` of 10 launches 10 us apart (8 us each; 2 us kernels 1 us after each
    launch), then 10 us of host time to the step's end."""
    t = Trace().step(1, 0, 110).region("fwd", 0, 100)
    for i in range(10):
        t.launch(10 * i, 8, 10 * i + 9, 2)
    return t


def test_a_cuda_graph_over_a_launch_bound_region() -> None:
    ev = launch_bound().frame()
    assert replay_step(ev, 1).step_us == pytest.approx(110.0)
    change = CudaGraph("fwd", launch_us=2.5, per_kernel_us=0.01, kernel_gap_us=0.29)
    # host: one graph launch (2.5 + 0.01) and nine captured launches at 0.01 each, then the
    # 10 us after the region; GPU: the first kernel 1 us after the graph launch, then the
    # others 0.29 us apart: 3.51 + 2 + 9 * 2.29 = 26.12
    r = replay_step(ev, 1, [change])
    assert r.step_us == pytest.approx(3.51 + 2 + 9 * 2.29)
    assert r.gpu_busy_us == pytest.approx(20.0)
    assert predict_speedup(ev, 1, [change]) == pytest.approx(110.0 / 26.12)
    # None: the whole step captured (the 10 us after the region go too)
    whole = replay_step(ev, 1, [CudaGraph(None, 2.5, 0.01, 0.29)])
    assert whole.step_us == pytest.approx(26.12)
    assert whole.host_busy_us == pytest.approx(26.12)  # the step window, host not waiting


def test_a_cuda_graph_copies_its_inputs_in_first() -> None:
    """The batch copied into the static inputs before the replay: a copy call on the host
    (the trace's median launch, 8 us here, at the host's pace) and its GPU time before the
    captured kernels."""
    ev = launch_bound().frame()
    change = CudaGraph("fwd", 2.5, 0.01, 0.29, input_copy_us=30.0)
    # host: the graph launch and the copy call (2.5 + 0.01 + 8); GPU: the copy and the first
    # kernel from 1 us after (30 + 2), then nine kernels 0.29 us apart
    assert replay_step(ev, 1, [change]).step_us == pytest.approx(10.51 + 1 + 32 + 9 * 2.29)
    # the host at half its pace: the copy call too (4 us), the GPU unchanged
    assert replay_step(ev, 1, [ScaleHost(0.5), change]).step_us == pytest.approx(
        6.51 + 1 + 32 + 9 * 2.29)
    # no inputs to copy: the graph as before
    assert replay_step(ev, 1, [CudaGraph("fwd", 2.5, 0.01, 0.29, input_copy_us=0.0)]
                       ).step_us == pytest.approx(26.12)


def test_an_input_copy_moves_its_bytes_twice_at_the_copy_bandwidth() -> None:
    # 8 MiB read and written at 0.74 of 4,800 GB/s: 4.72 us
    assert input_copy_us(8 * 2**20, 4800.0) == pytest.approx(
        2 * 8 * 2**20 / (COPY_BANDWIDTH_SHARE * 4800e3))
    assert input_copy_us(8 * 2**20, 4800.0) == pytest.approx(4.72, abs=0.01)
    assert input_copy_us(None, 4800.0) == input_copy_us(0, 4800.0) == 0.0
    assert input_copy_us(8 * 2**20, None) == 0.0


def test_the_time_between_calls_overlapped() -> None:
    """A DataLoader fetch (0..55) before the decorated call (60..100)."""
    t = (Trace().step(1, 0, 100).cpu("DataLoader.__next__", 0, 55)
         .region("train_step", 60, 40).launch(62, 5, 68, 2))
    ev = t.frame()
    assert replay_step(ev, 1).step_us == pytest.approx(100.0)
    # 60 us outside the call go: the launch at 2..7, the call's remaining 33 us: 40
    assert replay_step(ev, 1, [OverlapBetweenCalls("train_step")]).step_us == \
        pytest.approx(40.0)
    assert replay_step(ev, 1, [OverlapBetweenCalls("train_step", remaining=0.5)]).step_us == \
        pytest.approx(70.0)


def test_a_pageable_copy_made_non_blocking() -> None:
    """A synchronous HtoD copy call (0..50; the copy 10..45), then a kernel (61..71)."""
    t = (Trace().step(1, 0, 65)
         .launch(0, 50, 10, 35, kernel="Memcpy HtoD (Pageable -> Device)",
                 gpu_cat="gpu_memcpy", api="cudaMemcpyAsync")
         .launch(55, 5, 61, 10))
    ev = t.frame()
    assert replay_step(ev, 1, calibration="per_item").step_us == pytest.approx(71.0)
    # the copy call costs a launch (5); the copy 6..41; the kernel launch 10..15 waits for
    # the copy on its stream: 41..51
    assert replay_step(ev, 1, [NonBlockingCopies()]).step_us == pytest.approx(51.0)
    # DtoH only: the HtoD copy keeps its wait
    base = replay_step(ev, 1).step_us
    assert replay_step(ev, 1, [NonBlockingCopies(("DtoH",))]).step_us == pytest.approx(base)


def test_steps_share_the_gpu_tail_and_spread_over_steps() -> None:
    """Step 2's kernel queues behind step 1's: the GPU tail is counted once, in step 1."""
    t = (Trace().step(1, 0, 20).launch(2, 3, 6, 100)
         .step(2, 20, 20).launch(22, 3, 107, 100))
    ev = t.frame()
    steps = replay_steps(ev, calibration="per_item")
    assert [s.step for s in steps] == [1, 2]
    assert [s.measured_step_us for s in steps] == pytest.approx([106.0, 101.0])
    assert [s.step_us for s in steps] == pytest.approx([106.0, 101.0])
    spread = predict_speedups(ev, [FasterKernels(2.0)], calibration="per_item")
    assert spread.low <= spread.median <= spread.high
    assert len(spread.per_step) == 2
    assert replay_error(ev, calibration="per_item").high == pytest.approx(0.0, abs=1e-9)


def test_an_unknown_step_or_region_is_named() -> None:
    with pytest.raises(ValueError, match="no profiler step 9"):
        replay_step(host_bound().frame(), 9)
    with pytest.raises(ValueError, match="no host row named 'train_step'"):
        replay_step(host_bound().frame(), 1, [CudaGraph("train_step")])
    with pytest.raises(ValueError, match="no host row named 'train_step'"):
        replay_step(host_bound().frame(), 1, [OverlapBetweenCalls("train_step")])


def test_a_trace_without_profiler_steps_is_one_step() -> None:
    t = Trace().cpu("forward", 0, 100).launch(10, 5, 16, 2).launch(50, 5, 56, 2)
    (only,) = replay_steps(t.frame())
    assert only.step == -1
    assert only.measured_step_us == pytest.approx(100.0)
    assert only.step_us == pytest.approx(100.0)


def test_the_host_scale_that_gives_the_untraced_step() -> None:
    # host-bound: half the host time gives the 50 us untraced step
    assert fit_host_scale(host_bound().frame(), 50.0) == pytest.approx(0.5, abs=1e-6)
    # an untraced step no shorter than the replay: nothing to undo
    assert fit_host_scale(host_bound().frame(), 120.0) == 1.0
    # GPU-bound: no host speed reaches 150 us; the factor goes to its floor
    assert fit_host_scale(gpu_bound().frame(), 150.0) < 1e-3


def test_a_baseline_change_applies_to_both_sides() -> None:
    ev = launch_bound().frame()
    graph = [CudaGraph("fwd", 2.5, 0.01, 0.29)]
    # with the host twice as fast first, the graph gains against a 55 us step, not 110
    assert predict_speedup(ev, 1, graph, baseline=[ScaleHost(0.5)]) == pytest.approx(
        55.0 / replay_step(ev, 1, [ScaleHost(0.5), *graph]).step_us)


def test_gpu_work_queued_before_the_trace_keeps_its_times() -> None:
    """A kernel queued before tracing began (no launch in the trace) runs 0..50; step 1
    (10..30) launches a kernel that waits behind it (51..61)."""
    t = Trace().step(1, 10, 20).launch(12, 3, 51, 10)
    t.events.append(Ev("earlier_kernel", "kernel", 0, 50, tid=7, stream=7))
    ev = t.frame()
    g = build_graph(ev)
    assert g.item_call[0] == -1 and g.item_call[1] >= 0  # the carry first, not replayed
    assert replay_step(ev, 1).step_us == pytest.approx(51.0)
    # the carry is not the step's: only the step's own kernel gets faster
    assert replay_step(ev, 1, [FasterKernels(2.0)]).step_us == pytest.approx(46.0)


def test_a_cuda_graph_keeps_the_data_loaders_cpu_work() -> None:
    """The region holds a 50 us DataLoader fetch, then two launches: only the launch path
    goes under a graph."""
    t = (Trace().step(1, 0, 80).region("train_step", 0, 80)
         .region("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 50)
         .launch(55, 8, 64, 2).launch(65, 8, 74, 2))
    ev = t.frame()
    r = replay_step(ev, 1, [CudaGraph("train_step", 2.5, 0.0, 0.0)])
    # 50 us of loading stay; then the graph launch (2.5), the first kernel 1 us later (2 us)
    # and the second right behind it: 50 + 2.5 + 1 + 2 + 2
    assert r.step_us == pytest.approx(57.5)
