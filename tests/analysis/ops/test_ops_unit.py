"""self_vs_total on hand-built events tables: each rule of torch's key_averages, one test."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from support.ops_events import annotation, cpu, events, kernel, launch, row

from autoprof.analysis.metrics.ops import OPS_COLUMNS, event_flops, self_vs_total


def _matmul_add() -> pd.DataFrame:
    # 0 matmul_add [0, 10) > 1 aten::mm [1, 5) > 2 cudaLaunchKernel [2, 3); 3 kernel on GPU
    return events(
        annotation("matmul_add", 0, 10),
        cpu("aten::mm", 1, 4, parent=0),
        launch(2, 1, parent=1),
        kernel("gemm", 20, 2, op_row=1, launch_row=2),
    )


def test_docstring_example_numbers() -> None:
    ops = self_vs_total(_matmul_add())
    assert list(ops.columns) == OPS_COLUMNS
    top, mm, gemm = row(ops, "matmul_add"), row(ops, "aten::mm"), row(ops, "gemm", "gpu")
    assert (top.calls, top.self_cpu_us, top.cpu_total_us) == (1, 6.0, 10.0)
    assert (top.self_device_us, top.device_total_us) == (0.0, 2.0)
    assert (mm.self_cpu_us, mm.cpu_total_us) == (3.0, 4.0)  # the launch call is a child
    assert (mm.self_device_us, mm.device_total_us) == (2.0, 2.0)
    assert (gemm.self_cpu_us, gemm.cpu_total_us) == (0.0, 0.0)
    assert (gemm.self_device_us, gemm.device_total_us) == (2.0, 2.0)
    launch_row = row(ops, "cudaLaunchKernel")
    assert (launch_row.self_cpu_us, launch_row.device_total_us) == (1.0, 0.0)


def test_gpu_user_annotation_is_never_gpu_time() -> None:
    with_span = pd.concat(
        [_matmul_add(), events({"name": "matmul_add", "cat": "gpu_user_annotation",
                                "ts_us": 19, "dur_us": 500.0})],
        ignore_index=True,
    )
    ops = self_vs_total(with_span)
    assert ops["lane"].tolist().count("gpu") == 1  # only the kernel, no span row
    assert ops["self_device_us"].sum() == pytest.approx(4.0)  # gemm row + aten::mm's self
    assert row(ops, "matmul_add").device_total_us == 2.0
    assert ops.equals(self_vs_total(_matmul_add()))


def test_recursion_counts_each_event_like_torch() -> None:
    # rec [0, 10) > (rec [1, 9) > aten::add [2, 4), which launches a 1 us kernel) and
    # aten::neg [9.5, 10): the outer rec has two children, so both recs count.
    ev = events(
        annotation("rec", 0, 10),
        annotation("rec", 1, 8, parent=0),
        cpu("aten::add", 2, 2, parent=1),
        kernel("add_kernel", 30, 1, op_row=2),
        cpu("aten::neg", 9.5, 0.5, parent=0),
    )
    rec = row(self_vs_total(ev), "rec")
    assert rec.calls == 2
    assert rec.cpu_total_us == 18.0  # 10 + 8: nested same-name events double count
    assert rec.self_cpu_us == 7.5  # (10 - 8 - 0.5) + (8 - 2)
    assert rec.self_device_us == 0.0
    assert rec.device_total_us == 2.0  # the kernel counts once per enclosing rec


def test_only_child_with_the_parents_name_is_folded_in() -> None:
    # torch's _remove_dup_nodes: aten::sum [0, 10) whose only child is aten::sum [1, 9)
    # (the overload doing the work) > aten::fill_ [2, 3), launching a 1 us kernel.
    ev = events(
        cpu("aten::sum", 0, 10),
        cpu("aten::sum", 1, 8, parent=0),
        cpu("aten::fill_", 2, 1, parent=1),
        kernel("fill_kernel", 30, 1, op_row=2),
        kernel("sum_kernel", 31, 2, op_row=1),
    )
    ops = self_vs_total(ev)
    total = row(ops, "aten::sum")
    assert (total.calls, total.cpu_total_us, total.self_cpu_us) == (1, 10.0, 9.0)
    assert (total.self_device_us, total.device_total_us) == (2.0, 3.0)
    assert row(ops, "aten::fill_").device_total_us == 1.0


def test_a_chain_of_20000_nested_same_name_ops_folds_into_one() -> None:
    # recursion that nests aten::sum 20,000 deep, each the only child of the one above,
    # with aten::fill_ (and its kernel) at the bottom: every inner sum folds into the top
    # one, whose children are found through all 19,999 folded rows
    depth = 20_000
    chain = [cpu("aten::sum", i, 2 * depth - 2 * i, parent=i - 1) for i in range(depth)]
    ev = events(*chain, cpu("aten::fill_", depth, 1, parent=depth - 1),
                kernel("fill_kernel", 3 * depth, 4, op_row=depth))
    ops = self_vs_total(ev)
    total = row(ops, "aten::sum")
    assert (total.calls, total.cpu_total_us, total.self_cpu_us) == (1, 2 * depth, 2 * depth - 1)
    assert (total.self_device_us, total.device_total_us) == (0.0, 4.0)
    assert row(ops, "aten::fill_").device_total_us == 4.0


def test_kernels_under_20000_levels_of_recursion_count_once_per_enclosing_op() -> None:
    # rec nested 20,000 deep, each level with an aten::add (so no rec is folded) that
    # launches a 1 us kernel: the rec at level i encloses depth - i kernels
    depth = 20_000
    rows = []
    for i in range(depth):
        rows.append(cpu("aten::rec", 3 * i, 6 * depth - 6 * i, parent=2 * (i - 1) if i else -1))
        rows.append(cpu("aten::add", 3 * i + 1, 1, parent=2 * i))
    ev = events(*rows, *(kernel("k", 10 * depth + i, 1, op_row=2 * i + 1)
                         for i in range(depth)))
    ops = self_vs_total(ev)
    rec, add = row(ops, "aten::rec"), row(ops, "aten::add")
    assert rec.calls == depth and rec.self_device_us == 0.0
    assert rec.device_total_us == depth * (depth + 1) / 2
    assert (add.calls, add.self_device_us, add.device_total_us) == (depth, depth, depth)
    assert row(ops, "k", "gpu").device_total_us == depth


def test_a_cycle_in_the_parent_column_is_an_error() -> None:
    import numpy as np

    from autoprof.analysis.metrics.ops import _nearest_op_above

    parent = np.array([-1, 2, 1, 0])  # rows 1 and 2 are each other's parent
    with pytest.raises(ValueError, match="cycle"):
        _nearest_op_above(parent, np.array([True, False, False, False]))
    up = _nearest_op_above(np.array([-1, 0, 1, 2]), np.array([True, False, True, False]))
    assert up.tolist() == [-1, 0, 0, 2]


def test_children_of_skipped_rows_move_up_to_the_nearest_op() -> None:
    # The Trace event and a filtered utility op are not ops; aten::empty under the
    # filtered one is a child of aten::zeros for Self CPU.
    ev = events(
        {"name": "PyTorch Profiler (0)", "cat": "Trace", "ts_us": 0, "dur_us": 100},
        cpu("aten::zeros", 1, 10, parent=0),
        cpu("aten::_version", 2, 5, parent=1),
        cpu("aten::empty", 3, 3, parent=2),
    )
    ops = self_vs_total(ev)
    assert set(ops["name"]) == {"aten::zeros", "aten::empty"}
    assert row(ops, "aten::zeros").self_cpu_us == 7.0


def test_profiler_overhead_is_a_child_of_the_main_thread_op() -> None:
    # CUPTI's buffer request is written on pid -1; torch hangs it under the op the main
    # thread (tid == pid) was in, here aten::copy_ [0, 10), not the worker's aten::div.
    ev = events(
        cpu("aten::copy_", 0, 10),
        cpu("aten::div", 1, 8),
        {"name": "Activity Buffer Request", "cat": "overhead", "ts_us": 2, "dur_us": 6},
    )
    ev.loc[1, ["pid", "tid"]] = [1, 2]
    ev.loc[2, ["pid", "tid"]] = [-1, 0]
    ops = self_vs_total(ev)
    assert row(ops, "aten::copy_").self_cpu_us == 4.0
    assert row(ops, "aten::div").self_cpu_us == 8.0
    assert row(ops, "Activity Buffer Request").self_cpu_us == 6.0
    assert ops["self_cpu_us"].sum() == 18.0  # copy_ and div overlap on two threads


def test_profiler_steps_merge_into_one_row() -> None:
    ev = events(annotation("ProfilerStep#3", 0, 5), annotation("ProfilerStep#4", 6, 7))
    step = row(self_vs_total(ev), "ProfilerStep*")
    assert (step.calls, step.cpu_total_us) == (2, 12.0)


def test_lane_and_rank_filters() -> None:
    both = pd.concat(
        [_matmul_add(), _matmul_add().assign(rank=1, parent=lambda d: d["parent"].where(
            d["parent"] < 0, d["parent"] + 4), op_row=lambda d: d["op_row"].where(
            d["op_row"] < 0, d["op_row"] + 4))],
        ignore_index=True,
    )
    assert row(self_vs_total(both), "aten::mm").calls == 2
    one = self_vs_total(both, rank=1)
    assert row(one, "aten::mm").calls == 1
    assert row(one, "matmul_add").device_total_us == 2.0
    assert set(self_vs_total(both, lane="gpu")["name"]) == {"gemm"}
    assert "gemm" not in set(self_vs_total(both, lane="cpu")["name"])
    with pytest.raises(ValueError, match="lane must be"):
        self_vs_total(both, lane="GPU")  # type: ignore[arg-type]


def test_kernel_without_op_row_goes_to_the_op_around_its_launch() -> None:
    ev = _matmul_add()
    ev.loc[3, "op_row"] = -1
    assert self_vs_total(ev).equals(self_vs_total(_matmul_add()))


def test_subset_with_its_own_index_labels() -> None:
    ev = pd.concat([events(cpu("aten::zeros", -50, 1)), _matmul_add()], ignore_index=True)
    ev["parent"] = ev["parent"].where(ev["parent"] < 0, ev["parent"] + 1)
    ev["op_row"] = ev["op_row"].where(ev["op_row"] < 0, ev["op_row"] + 1)
    ev["launch_row"] = ev["launch_row"].where(ev["launch_row"] < 0, ev["launch_row"] + 1)
    subset = ev.iloc[1:]  # index labels 1..4, parents refer to labels
    assert self_vs_total(subset).equals(self_vs_total(_matmul_add()))


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match=r"\['op_row'\]"):
        self_vs_total(_matmul_add().drop(columns=["op_row"]))


def test_empty_events_give_an_empty_table() -> None:
    ops = self_vs_total(_matmul_add().iloc[:0])
    assert ops.empty and list(ops.columns) == OPS_COLUMNS


def test_flops_from_torch_formulas_when_the_trace_has_none() -> None:
    ev = events(
        cpu("aten::mm", 0, 1, input_dims="[[64, 32], [32, 16]]"),
        cpu("aten::addmm", 2, 1, input_dims="[[16], [64, 32], [32, 16], [], []]"),
        cpu("aten::bmm", 4, 1, input_dims="[[4, 8, 2], [4, 2, 3]]"),
        cpu("aten::add", 6, 1, input_dims="[[64, 64], [64, 64], []]"),
        cpu("aten::mm", 8, 1, input_dims="[[2, 2], [2, 2]]", flops=5.0),  # recorded wins
        cpu("aten::relu", 10, 1, input_dims="[[64, 64]]"),
        cpu("aten::mm", 12, 1, input_dims=""),  # shapes not recorded
    )
    flops = event_flops(ev)
    assert flops[:5].tolist() == [2 * 64 * 32 * 16, 2 * 64 * 32 * 16, 2 * 4 * 8 * 2 * 3,
                                  64 * 64, 5.0]
    assert math.isnan(flops[5]) and math.isnan(flops[6])
    assert row(self_vs_total(ev), "aten::mm").flops == 2 * 64 * 32 * 16 + 5.0
    assert math.isnan(row(self_vs_total(ev), "aten::relu").flops)


def test_flops_estimate_reads_missing_text_in_categorical_columns() -> None:
    ev = events(cpu("aten::mm", 0, 1, input_dims="[[2, 3], [3, 4]]"),
                cpu("aten::mm", 2, 1, input_dims="[[1, 1], [1, 1]]"))
    ev.loc[1, "input_dims"] = None  # NA in a categorical without "": no shapes, not an error
    assert "" not in ev["input_dims"].cat.categories
    flops = event_flops(ev)
    assert flops[0] == 2 * 2 * 3 * 4 and math.isnan(flops[1])


def test_input_shapes_is_the_most_common_and_how_many_others() -> None:
    ev = events(
        cpu("aten::add", 0, 1, input_dims="[[1], [1]]"),
        cpu("aten::add", 2, 1, input_dims="[[8], [8]]"),
        cpu("aten::add", 4, 1, input_dims="[[8], [8]]"),
        cpu("aten::add", 6, 1),
        cpu("aten::neg", 8, 1),
    )
    ops = self_vs_total(ev)
    assert row(ops, "aten::add").input_shapes == "[[8], [8]] (+1 more)"
    assert row(ops, "aten::neg").input_shapes == ""


def test_rows_in_order_of_first_appearance() -> None:
    ev = events(cpu("b", 0, 1), cpu("a", 2, 1), cpu("b", 4, 1))
    assert self_vs_total(ev)["name"].tolist() == ["b", "a"]
