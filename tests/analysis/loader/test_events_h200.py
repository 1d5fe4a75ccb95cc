"""The events table on the real H200 traces reproduces the facts in tests/data/h200/README.md
and torch's own key_averages numbers (totals.json, written by torch on that machine)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from support.invariants import check_events
from support.loader_paths import H200_TRACES, MATMUL

from autoprof.analysis import build_events, load, read_trace


@pytest.mark.parametrize(
    "trace", H200_TRACES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_invariants_hold_on_every_h200_trace(trace):
    events = load(trace).events
    check_events(events)
    kernels = events[events["cat"] == "kernel"]
    assert len(kernels) > 0
    # README: every kernel is linked to its launch by args.correlation; a kernel whose
    # launch happened before the profiling window (sweep/n8192 has one) has none to link
    launches = events[events["cat"].isin(["cuda_runtime", "cuda_driver"])]
    in_window = kernels["correlation"].isin(launches["correlation"])
    assert in_window.sum() >= len(kernels) - 1
    linked = kernels[in_window]
    assert (linked["launch_row"] >= 0).all()
    assert (kernels.loc[~in_window, "launch_row"] == -1).all()
    launch_names = set(events["name"].to_numpy()[linked["launch_row"].to_numpy()])
    assert launch_names <= {"cudaLaunchKernel", "cuLaunchKernelEx"}
    assert (linked["op_row"] >= 0).all()


@pytest.mark.parametrize("case", ["n64_cold", "n64_prewarm", "n4096_cold", "n4096_prewarm"])
def test_self_and_total_cpu_match_torch_key_averages(case):
    """torch's table (totals.json) is the reference: per op name, Self CPU = sum of self_us
    and CPU total = sum of dur_us over CPU rows, to 0.01 us (Kineto rounds to 1 ns; the
    sums of 3 rows differ from torch's by float rounding only)."""
    events = load(MATMUL / case / "trace.json").events
    totals = json.loads((MATMUL / case / "totals.json").read_text())
    cpu = events[events["lane"] == "cpu"]
    checked = 0
    for entry in totals["events"]:
        key = entry["key"]
        if entry["self_cpu_us"] == 0 and entry["cpu_total_us"] == 0:
            continue
        rows = cpu[cpu["name"].str.startswith("ProfilerStep#")] if key == "ProfilerStep*" \
            else cpu[cpu["name"] == key]
        assert len(rows) == entry["count"], key
        assert rows["self_us"].sum() == pytest.approx(entry["self_cpu_us"], abs=0.01), key
        assert rows["dur_us"].sum() == pytest.approx(entry["cpu_total_us"], abs=0.01), key
        checked += 1
    assert checked >= 7


@pytest.mark.parametrize(
    ("case", "kernel_us", "tolerance_us"),
    [("n64_cold", 8.3, 0.2), ("n64_prewarm", 8.3, 0.2), ("n4096_cold", 581, 3),
     ("n4096_prewarm", 581, 3)],
)
def test_gpu_work_in_active_steps_matches_readme(case, kernel_us, tolerance_us):
    events = load(MATMUL / case / "trace.json").events
    work = events[(events["cat"] == "kernel") & (events["step"] >= 0)]
    assert len(work) == 6
    assert work["dur_us"].sum() == pytest.approx(kernel_us, abs=tolerance_us)
    assert sorted(work["step"].unique()) == sorted(
        int(n.split("#")[1]) for n in events["name"] if n.startswith("ProfilerStep#")
    )


def test_gpu_annotations_are_spans_not_work():
    """README: torch shows matmul_add at 1124% Self CUDA; here it is a span with self 0."""
    events = load(MATMUL / "n64_cold" / "trace.json").events
    spans = events[events["cat"] == "gpu_user_annotation"]
    assert len(spans) == 3
    assert (spans["lane"] == "gpu").all()
    assert not spans["is_gpu_work"].any()
    assert (spans["self_us"] == 0).all()
    gpu_work_us = events.loc[events["is_gpu_work"], "self_us"].sum()
    assert gpu_work_us == pytest.approx(8.254, abs=0.002)  # table footer: Self CUDA 8.254us


def test_first_step_cpu_span_is_about_three_times_the_later_ones():
    events = load(MATMUL / "n64_cold" / "trace.json").events
    steps = events[events["name"].str.startswith("ProfilerStep#")].sort_values("ts_us")
    first, *rest = steps["dur_us"].tolist()
    assert first > 1.8 * max(rest)


def test_kernel_rows_carry_device_stream_and_launching_op():
    events = load(MATMUL / "n4096_cold" / "trace.json").events
    kernels = events[events["cat"] == "kernel"]
    assert set(kernels["device"]) == {0} and set(kernels["stream"]) == {7}
    ops = set(events["name"].to_numpy()[kernels["op_row"].to_numpy()])
    assert ops == {"aten::mm", "aten::add"}
    cpu = events[events["lane"] == "cpu"]
    assert (cpu["device"] == -1).all() and (cpu["stream"] == -1).all()
    mm = events[events["name"] == "aten::mm"]
    assert (mm["input_dims"] == "[[4096, 4096], [4096, 4096]]").all()  # the file's text
    assert mm["flops"].isna().all()  # this trace has no args.flops
    assert (events["input_dims"] == "").sum() > 0


def test_build_events_directly_and_non_integer_pids_map_to_stable_negatives():
    trace = read_trace(MATMUL / "n64_cold" / "trace.json")
    events = build_events(trace, rank=3)
    check_events(events)
    assert (events["rank"] == 3).all()
    span = events[events["cat"] == "Trace"]
    assert len(span) == 1 and int(span["pid"].iloc[0]) < 0
    again = build_events(read_trace(MATMUL / "n64_cold" / "trace.json"), rank=3)
    assert int(again.loc[again["cat"] == "Trace", "pid"].iloc[0]) == int(span["pid"].iloc[0])
    assert trace.metadata["deviceProperties"][0]["name"] == "NVIDIA H200"


def test_a_consumed_trace_gives_the_same_table_and_keeps_only_its_memory_events(tmp_path):
    whole = build_events(read_trace(MATMUL / "n64_cold" / "trace.json"), rank=1)
    trace = read_trace(MATMUL / "n64_cold" / "trace.json")
    memory = trace.columns.memory
    consumed = build_events(trace, rank=1, consume=True)
    pd.testing.assert_frame_equal(consumed, whole, check_exact=True)
    assert len(trace.columns) == 0 and len(trace.columns.ts) == len(trace.columns.pid) == 0
    assert trace.columns.memory is memory and trace.columns.names  # the vocabularies stay
    path = tmp_path / "instants.json"  # no usable row: left whole, its columns say why
    path.write_text(json.dumps({"traceEvents": [{"ph": "i", "name": "x", "ts": 1}]}))
    lonely = read_trace(path)
    assert build_events(lonely, consume=True).empty and len(lonely.columns) == 1


def test_ac2g_flows_fill_a_missing_correlation(tmp_path):
    raw = json.loads((MATMUL / "n64_cold" / "trace.json").read_text())
    for event in raw["traceEvents"]:
        if event.get("ph") == "X" and isinstance(event.get("args"), dict):
            event["args"].pop("correlation", None)
    path = tmp_path / "no_correlation.json"
    path.write_text(json.dumps(raw))
    events = load(path).events
    kernels = events[events["cat"] == "kernel"]
    assert (kernels["launch_row"] >= 0).all()
    assert np.array_equal(
        kernels["correlation"].to_numpy(),
        events["correlation"].to_numpy()[kernels["launch_row"].to_numpy()],
    )
