"""format_table's layout rules and write_tables' files, on small tables and a real trace."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autoprof.analysis import TraceError
from autoprof.analysis.metrics.ops import OPS_COLUMNS, self_vs_total
from autoprof.analysis.report.tables import CSV_COLUMNS, format_table, merge_ops, write_tables

H200 = Path(__file__).resolve().parents[2] / "data" / "h200"
N64 = H200 / "matmul_add" / "n64_cold" / "trace.json"


def _ops(*rows: tuple) -> pd.DataFrame:
    """Rows of (name, lane, calls, self_cpu, cpu_total, self_dev, dev_total[, flops])."""
    full = [r + (np.nan,) * (8 - len(r)) + ("",) for r in rows]
    return pd.DataFrame(full, columns=OPS_COLUMNS)


def test_cpu_only_table_has_no_device_columns() -> None:
    ops = _ops(("a", "cpu", 2, 0.5, 1500.0, 0, 0), ("b", "cpu", 1, 2.5e6, 2.5e6, 0, 0))
    table = format_table(ops)
    lines = table.splitlines()
    assert "CUDA" not in table
    assert lines[1].rstrip().endswith("CPU time avg    # of Calls")
    assert lines[-1] == "Self CPU time total: 2.500s"
    # sorted by Self CPU, descending; us below 1 ms, ms below 1 s, s above
    assert lines[3].split() == ["b", "100.00%", "2.500s", "100.00%", "2.500s", "2.500s", "1"]
    assert lines[4].split() == ["a", "0.00%", "0.500us", "0.06%", "1.500ms", "750.000us", "2"]


def test_device_columns_and_footer_use_device_rows_only() -> None:
    ops = _ops(
        ("aten::mm", "cpu", 1, 3.0, 4.0, 2.0, 2.0),
        ("gemm", "gpu", 1, 0.0, 0.0, 2.0, 2.0),
        ("aten::add", "cpu", 1, 1.0, 1.0, 0.0, 6.0),  # device total from a child kernel
        ("add_kernel", "gpu", 3, 0.0, 0.0, 6.0, 6.0),
    )
    table = format_table(ops, sort_by="self_cuda_time_total")
    lines = table.splitlines()
    assert "  Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls" in lines[1]
    assert lines[-1] == "Self CUDA time total: 8.000us"  # kernels only, not ops' Self CUDA
    assert lines[-2] == "Self CPU time total: 4.000us"
    first = lines[3].split()
    assert first[0] == "add_kernel" and first[6:10] == ["6.000us", "75.00%", "6.000us", "2.000us"]
    assert "Self XPU time total: 8.000us" in format_table(ops, device_name="xpu")


def test_sorting_is_descending_and_stable() -> None:
    ops = _ops(("a", "cpu", 1, 1.0, 5.0, 0, 0), ("b", "cpu", 3, 2.0, 5.0, 0, 0),
               ("c", "cpu", 2, 2.0, 9.0, 0, 0))
    names = lambda t: [line.split()[0] for line in t.splitlines()[3:-2]]  # noqa: E731
    assert names(format_table(ops)) == ["b", "c", "a"]  # ties keep first-seen order
    assert names(format_table(ops, sort_by="cpu_total_us")) == ["c", "a", "b"]
    assert names(format_table(ops, sort_by="count")) == ["b", "c", "a"]
    assert names(format_table(ops, sort_by="cpu_time")) == ["a", "c", "b"]  # avg 5, 4.5, 1.7
    with pytest.raises(ValueError, match="cannot sort by 'bogus'"):
        format_table(ops, sort_by="bogus")


def test_row_limit_prints_fewer_rows_but_totals_cover_all() -> None:
    ops = _ops(*[(f"op{i}", "cpu", 1, float(i + 1), float(i + 1), 0, 0) for i in range(5)])
    table = format_table(ops, row_limit=2)
    assert len(table.splitlines()) == 3 + 2 + 2
    assert table.splitlines()[-1] == "Self CPU time total: 15.000us"
    assert "33.33%" in table  # op4: 5 of 15


def test_long_names_are_cut_like_torch() -> None:
    long = "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add>"
    table = format_table(_ops((long, "gpu", 1, 0, 0, 1.0, 1.0)))
    assert long[:52] + "..." in table
    assert len(table.splitlines()[0]) == 55 + 2 + 10 * 14


def test_flops_column_scaled_by_the_smallest_count() -> None:
    ops = _ops(("aten::mm", "cpu", 3, 1.0, 1.0, 0, 0, 1572864.0),
               ("aten::add", "cpu", 3, 1.0, 1.0, 0, 0, 12288.0),
               ("aten::relu", "cpu", 3, 1.0, 1.0, 0, 0))
    lines = format_table(ops).splitlines()
    assert lines[1].rstrip().endswith("Total KFLOPs")
    assert lines[3].rstrip().endswith("1572.864") and lines[4].rstrip().endswith("12.288")
    assert lines[5].rstrip().endswith("--")


def test_shapes_column_on_request() -> None:
    ops = _ops(("aten::mm", "cpu", 1, 1.0, 1.0, 0, 0)).assign(input_shapes="[[64, 64], [64, 64]]")
    assert "Input Shapes" not in format_table(ops)
    assert "[[64, 64], [64, 64]]" in format_table(ops, with_shapes=True)


def test_empty_table_is_empty_text() -> None:
    assert format_table(_ops()) == ""


def test_write_tables_writes_both_files(tmp_path: Path) -> None:
    paths = write_tables([N64], tmp_path)
    assert paths == [tmp_path / "table.txt", tmp_path / "ops.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ops.csv", "table.txt"]  # no temp
    import autoprof

    ops = self_vs_total(autoprof.load(N64).events)
    assert paths[0].read_text() == format_table(ops, sort_by="device_total_us")
    with paths[1].open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_COLUMNS
    by_name = {r["name"]: r for r in rows}
    assert len(by_name) == len(ops)
    mm = by_name["aten::mm"]
    assert (mm["calls"], mm["self_device_us"], mm["flops"]) == ("3", "5.696", "1572864")
    assert mm["input_shapes"] == ops.set_index("name").loc["aten::mm", "input_shapes"] != ""
    assert by_name["ProfilerStep*"]["flops"] == ""  # none recorded: empty, not 0


def test_write_tables_with_no_traces_writes_empty_files(tmp_path: Path) -> None:
    table, ops_csv = write_tables([], tmp_path)
    assert table.read_text() == ""
    assert ops_csv.read_text() == ",".join(CSV_COLUMNS) + "\n"


def test_ops_csv_quotes_names_a_spreadsheet_would_run(tmp_path: Path) -> None:
    import json

    names = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\ry", "aten::mm"]
    events = [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": 10 * i,
               "dur": 5} for i, n in enumerate(names)]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    write_tables([trace], tmp_path)
    with (tmp_path / "ops.csv").open(newline="") as f:
        written = {r["name"] for r in csv.DictReader(f)}
    assert written == {"'" + n.replace("\r", "\n") for n in names[:-1]} | {"aten::mm"}


def test_ops_csv_a_carriage_return_inside_a_name_does_not_start_a_row(tmp_path: Path) -> None:
    import json

    names = ["aten::x\r=HYPERLINK(1)", "aten::y\r\n@SUM(A1)", "aten::mm"]
    events = [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": 10 * i,
               "dur": 5} for i, n in enumerate(names)]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    write_tables([trace], tmp_path)
    with (tmp_path / "ops.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    assert len(rows) == 1 + len(names)  # the header and one row per op
    assert {r[0] for r in rows[1:]} == {"aten::x\n=HYPERLINK(1)", "aten::y\n@SUM(A1)", "aten::mm"}


def test_write_tables_sums_several_traces(tmp_path: Path) -> None:
    write_tables([N64, N64], tmp_path)
    rows = {r["name"]: r for r in csv.DictReader((tmp_path / "ops.csv").open(newline=""))}
    assert rows["aten::mm"]["calls"] == "6"
    assert rows["aten::mm"]["self_device_us"] == "11.392"


def test_ops_csv_shapes_count_every_shape_of_every_trace(tmp_path: Path) -> None:
    import json

    def trace(name: str, shapes: list[list[list[int]]]) -> Path:
        events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                   "ts": 10 * i, "dur": 5, "args": {"Input Dims": s}}
                  for i, s in enumerate(shapes)]
        path = tmp_path / name
        path.write_text(json.dumps({"traceEvents": events}))
        return path

    a = trace("a.json", [[[1]], [[1]]])
    b = trace("b.json", [[[2]], [[3]]])
    write_tables([a, b], tmp_path)
    rows = {r["name"]: r for r in csv.DictReader((tmp_path / "ops.csv").open(newline=""))}
    assert rows["aten::add"]["calls"] == "4"
    assert rows["aten::add"]["input_shapes"] == "[[1]] (+2 more)"
    write_tables([b], tmp_path)
    rows = {r["name"]: r for r in csv.DictReader((tmp_path / "ops.csv").open(newline=""))}
    assert rows["aten::add"]["input_shapes"] == "[[2]] (+1 more)"  # a tie: the first seen


def test_merge_ops_keeps_first_seen_order_and_common_shapes() -> None:
    a = _ops(("x", "cpu", 1, 1.0, 1.0, 0, 0)).assign(input_shapes="[[1]]")
    b = _ops(("y", "cpu", 1, 1.0, 1.0, 0, 0), ("x", "cpu", 5, 1.0, 1.0, 0, 0)).assign(
        input_shapes="[[2]]")
    merged = merge_ops([a, b])
    assert merged["name"].tolist() == ["x", "y"]
    assert merged.loc[0, "calls"] == 6 and merged.loc[0, "input_shapes"] == "[[2]]"


def test_bad_trace_raises_trace_error_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": [')
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(TraceError, match="bad.pt.trace.json"):
        write_tables([N64, bad], run_dir)
    assert list(run_dir.iterdir()) == []


def test_failed_write_keeps_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "table.txt").write_text("old table\n")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_tables([N64], tmp_path)
    assert (tmp_path / "table.txt").read_text() == "old table\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.txt"]


def test_write_tables_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; "
        "from autoprof.analysis.report.tables import write_tables; "
        f"write_tables([Path({str(N64)!r})], Path({str(tmp_path)!r})); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert (tmp_path / "ops.csv").exists()
