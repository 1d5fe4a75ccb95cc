"""per_step and overhead on small hand-built events tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from support.diagbuild import Trace, matmul_like

from autoprof.analysis.metrics.overhead import overhead
from autoprof.analysis.metrics.stats import MissingColumnsError, gaps, merge_intervals, union_length
from autoprof.analysis.metrics.steps import STEP_COLUMNS, per_step


def test_merge_and_gaps():
    s, e = merge_intervals([20.0, 0.0, 5.0], [30.0, 10.0, 12.0])
    assert list(s) == [0.0, 20.0] and list(e) == [12.0, 30.0]
    assert union_length([0.0, 5.0, 20.0], [10.0, 12.0, 30.0]) == 22.0
    assert union_length([0.0, 20.0], [10.0, 30.0], lo=5.0, hi=25.0) == 10.0
    starts, lengths = gaps([2.0, 6.0], [4.0, 7.0], 0.0, 10.0)
    assert list(starts) == [0.0, 4.0, 7.0] and list(lengths) == [2.0, 2.0, 3.0]


def test_per_step_counts_gpu_work_by_launch_step_and_merges_overlap():
    t = Trace().step(5, 0.0, 100.0)
    t.cpu("aten::mm", 10.0, 20.0)
    t.launch(12.0, 5.0, 20.0, 40.0, stream=7)  # kernel 20..60
    t.launch(18.0, 5.0, 30.0, 40.0, stream=8)  # kernel 30..70 on another stream: overlaps
    t.step(6, 100.0, 50.0)
    t.launch(110.0, 5.0, 130.0, 10.0)  # kernel 130..140
    steps = per_step(t.frame())
    assert list(steps.columns) == STEP_COLUMNS
    s5, s6 = steps.iloc[0], steps.iloc[1]
    assert (s5["step"], s5["cpu_span_us"], s5["kernels"], s5["launches"]) == (5, 100.0, 2, 2)
    assert s5["gpu_work_us"] == 80.0  # 40 + 40
    assert s5["gpu_busy_us"] == 50.0  # union 20..70
    assert s5["gpu_window_us"] == 70.0  # step start 0 .. last kernel end 70
    assert s5["gpu_idle_us"] == 20.0  # 0..20 before the first kernel
    assert s6["gpu_idle_us"] == 30.0 and s6["gpu_busy_us"] == 10.0
    # self CPU: step 5 is 100 us span, with mm (20) and the two launches inside mm/step
    assert s5["self_cpu_us"] == pytest.approx(100.0)


def test_per_step_without_steps_is_empty_with_columns():
    t = Trace().cpu("aten::add", 0.0, 10.0)
    steps = per_step(t.frame())
    assert steps.empty and list(steps.columns) == STEP_COLUMNS


def test_missing_columns_are_named():
    frame = matmul_like().frame().drop(columns=["launch_row", "is_gpu_work"])
    with pytest.raises(MissingColumnsError, match=r"per_step.*\['is_gpu_work', 'launch_row'\]"):
        per_step(frame)
    with pytest.raises(MissingColumnsError, match="overhead"):
        overhead(frame)


def test_overhead_totals_window_and_busy():
    t = matmul_like(steps=4, cpu_step_us=100.0, kernel_us=2.0, launch_us=8.0)
    t.cpu("profiler span", 0.0, 10_000.0, cat="Trace")  # the profiler's own span: not CPU work
    t.gpu("matmul_add", 1011.0, 50.0, cat="gpu_user_annotation")  # a span, never GPU work
    ov = overhead(t.frame())
    assert ov.self_gpu_us == pytest.approx(8.0)
    # CPU: 4 steps x 100 us of spans, all self time under them (Trace row excluded)
    assert ov.self_cpu_us == pytest.approx(400.0)
    assert ov.cpu_gpu_ratio == pytest.approx(50.0)
    # window: first step start (1000) to last kernel end: step 3 starts 1300, op +10, launch
    # +2, 8 us launch, +1 -> kernel 1321..1323
    assert ov.window_us == pytest.approx(323.0)
    assert ov.gpu_busy_pct == pytest.approx(100 * 8.0 / 323.0)
    assert ov.kernels == 4 and ov.launches == 4 and ov.steps == 4
    assert ov.launch_latency_us_p50 == pytest.approx(1.0)
    assert ov.launch_queued_pct == 0.0
    assert ov.short_kernels == 4  # 2 us kernels, 8 us launch calls
    assert ov.has_gpu


def test_launch_latency_separates_queueing_from_dispatch():
    t = Trace().step(0, 0.0, 100.0)
    t.launch(0.0, 5.0, 10.0, 500.0)  # kernel 10..510
    t.launch(20.0, 5.0, 510.0, 500.0)  # launched at 25, waits for the first: queued
    ov = overhead(t.frame())
    assert ov.launch_latency_us_max == pytest.approx(485.0)
    assert ov.launch_queued_pct == 50.0
    assert ov.dispatch_latency_us_p50 == pytest.approx(2.5)  # (5 + 0) / 2
    assert ov.short_kernels == 0


def test_host_syncs_nested_count_once_and_outside_steps_are_separate():
    t = Trace().step(0, 0.0, 1000.0)
    t.cpu("aten::item", 100.0, 300.0)
    t.cpu("aten::_local_scalar_dense", 110.0, 280.0)
    t.cpu("cudaStreamSynchronize", 150.0, 200.0, cat="cuda_runtime")
    t.cpu("aten::to", 500.0, 100.0)
    t.cpu("aten::_to_copy", 505.0, 90.0)
    t.cpu("aten::copy_", 510.0, 80.0)
    t.launch(520.0, 60.0, 530.0, 10.0, kernel="Memcpy DtoH (Device -> Pageable)",
             api="cudaMemcpyAsync", gpu_cat="gpu_memcpy")
    t.cpu("aten::to", 700.0, 50.0)  # a DtoH copy into pinned memory does not block
    t.cpu("aten::copy_", 705.0, 40.0)
    t.launch(710.0, 5.0, 720.0, 10.0, kernel="Memcpy DtoH (Device -> Pinned)",
             api="cudaMemcpyAsync", gpu_cat="gpu_memcpy")
    t.cpu("cudaDeviceSynchronize", 2000.0, 50.0, cat="cuda_runtime")  # after the loop
    ov = overhead(t.frame())
    assert ov.host_syncs == 3
    assert ov.host_syncs_in_steps == 2
    assert ov.host_sync_in_steps_us == pytest.approx(400.0)  # item 300 + to 100
    assert ov.host_sync_us == pytest.approx(450.0)
    assert ov.sync_names == {"aten::item": 1, "aten::to": 1, "cudaDeviceSynchronize": 1}


def test_idle_gaps_inside_steps_and_work_queued_before_tracing():
    t = Trace().step(0, 0.0, 400.0)
    t.launch(0.0, 5.0, 10.0, 50.0)  # 10..60
    t.launch(200.0, 5.0, 300.0, 50.0)  # 300..350: a 240 us hole in the middle
    ov = overhead(t.frame())
    assert ov.idle_gaps == 2  # 0..10 and 60..300
    assert ov.idle_gap_total_us == pytest.approx(250.0)
    assert ov.idle_gap_max_us == pytest.approx(240.0)
    assert ov.idle_gap_max_at_us == pytest.approx(60.0)
    assert ov.step_window_us == pytest.approx(350.0)
    # work launched before tracing (no launch row) runs first: before it the lane is unknown
    u = Trace().step(0, 0.0, 400.0)
    u.gpu("earlier_kernel", 100.0, 200.0)
    u.launch(10.0, 5.0, 300.0, 50.0)
    assert overhead(u.frame()).idle_gap_total_us == 0.0
    assert per_step(u.frame())["gpu_idle_us"].iloc[0] == 0.0


def test_cpu_only_and_empty():
    t = Trace().step(0, 0.0, 100.0).cpu("aten::add", 10.0, 20.0)
    ov = overhead(t.frame())
    assert not ov.has_gpu and ov.gpu_busy_pct is None and ov.cpu_gpu_ratio is None
    assert ov.self_cpu_us == pytest.approx(100.0)
    assert ov.launch_latency_us_p50 is None
    d = ov.to_dict()
    assert all(not (isinstance(v, float) and math.isnan(v)) for v in d.values())
    empty = overhead(t.frame().iloc[0:0])
    assert empty.steps == 0 and empty.window_us == 0.0


def test_rank_filter():
    a = matmul_like(steps=3, kernel_us=2.0).frame()
    b = matmul_like(steps=3, kernel_us=6.0).frame().assign(rank=1)

    both = pd.concat([a, b], ignore_index=True)
    # keep the row links valid after concatenation
    for col in ("parent", "launch_row", "op_row"):
        shifted = both[col].to_numpy().copy()
        mask = (both["rank"].to_numpy() == 1) & (shifted >= 0)
        shifted[mask] += len(a)
        both[col] = shifted
    assert overhead(both, rank=0).self_gpu_us == pytest.approx(6.0)
    assert overhead(both, rank=1).self_gpu_us == pytest.approx(18.0)
    assert overhead(both).self_gpu_us == pytest.approx(24.0)
    assert overhead(both).ranks == 2
    assert set(per_step(both)["rank"]) == {0, 1}
    assert len(per_step(both, rank=1)) == 3


def test_graph_replay_is_not_short_kernels():
    t = Trace().step(0, 0.0, 400.0)
    t.launch(0.0, 10.0, 12.0, 2.0, api="cudaGraphLaunch")
    frame = t.frame()
    # the replay runs 50 more 2 us kernels, all linked to the same cudaGraphLaunch
    launch = int(frame.index[frame["name"] == "cudaGraphLaunch"][0])
    first = frame[frame["lane"] == "gpu"].iloc[0]
    more = pd.DataFrame([first] * 50).reset_index(drop=True)
    more["ts_us"] = [14.0 + 2.0 * i for i in range(50)]
    more["end_us"] = more["ts_us"] + 2.0
    graph = pd.concat([frame, more], ignore_index=True).sort_values("ts_us", kind="stable")
    graph = graph.reset_index(drop=True)
    graph["launch_row"] = np.where(graph["lane"] == "gpu", int(
        graph.index[graph["name"] == "cudaGraphLaunch"][0]), -1)
    assert launch >= 0
    ov = overhead(graph)
    assert ov.kernels == 51 and ov.short_kernels == 0
    single = overhead(frame)
    assert single.short_kernels == 1  # one 2 us kernel from a 10 us call


def test_end_of_cycle_sync_in_the_last_step_is_not_the_programs():
    t = Trace()
    for i in range(3):
        t.step(i, i * 100.0, 90.0).cpu("aten::add", i * 100.0 + 5, 20.0)
    t.cpu("cudaDeviceSynchronize", 260.0, 20.0, cat="cuda_runtime")  # under ProfilerStep#2
    ov = overhead(t.frame())
    assert ov.host_syncs == 1 and ov.host_syncs_in_steps == 0
    t.cpu("cudaDeviceSynchronize", 160.0, 20.0, cat="cuda_runtime")  # in step 1: the program's
    ov = overhead(t.frame())
    assert ov.host_syncs == 2 and ov.host_syncs_in_steps == 1
