"""torch's key_averages table as text, and the run folder's ``table.txt`` and ``ops.csv``.

``format_table`` lays out ``self_vs_total`` output exactly as
``torch.autograd.profiler_util._build_table`` prints ``prof.key_averages().table()``: the same
headers, right-aligned 12-wide columns, dashed separators, us/ms/s units and the footer
``Self CPU time total`` / ``Self CUDA time total``. Device columns appear only when some op has
device time. What differs: no row for ``gpu_user_annotation`` spans (torch prints one, with
"Self CUDA %" above 100%), and no Node ID, overload-name or Source Location columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from autoprof import runfolder
from autoprof.analysis.metrics.op_shapes import shapes_text
from autoprof.analysis.metrics.ops import OPS_COLUMNS, ops_and_shapes

# ops.csv: the ops table's columns without `lane` (one row per op name in the file)
CSV_COLUMNS = [c for c in OPS_COLUMNS if c != "lane"]

# torch's sort keys (key_averages().table(sort_by=...)) -> our columns.
_TORCH_SORT_KEYS = {
    "self_cpu_time_total": "self_cpu_us",
    "cpu_time_total": "cpu_total_us",
    "self_cuda_time_total": "self_device_us",
    "self_device_time_total": "self_device_us",
    "cuda_time_total": "device_total_us",
    "device_time_total": "device_total_us",
    "cpu_time": "cpu_avg_us",
    "cuda_time": "device_avg_us",
    "device_time": "device_avg_us",
    "count": "calls",
}
_SORT_COLUMNS = (
    "self_cpu_us",
    "cpu_total_us",
    "self_device_us",
    "device_total_us",
    "cpu_avg_us",
    "device_avg_us",
    "calls",
    "flops",
)
# a spreadsheet reads a cell that starts with one of these as a formula
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_WIDTH = 12
_SPACING = 2
_FLOPS_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _sorted_rows(ops_df: pd.DataFrame, sort_by: str) -> pd.DataFrame:
    """The rows with their averages, sorted by ``sort_by`` (ours or torch's key)."""
    rows = _with_averages(ops_df)
    key = _TORCH_SORT_KEYS.get(sort_by, sort_by)
    if key not in _SORT_COLUMNS:
        valid = sorted(set(_SORT_COLUMNS) | set(_TORCH_SORT_KEYS))
        raise ValueError(f"format_table: cannot sort by {sort_by!r}; use one of {valid}")
    return rows.sort_values(key, ascending=False, kind="stable", na_position="last")


@dataclass(frozen=True)
class _Layout:
    """Which columns the table has and what its shares are of."""

    widths: list[int]
    self_cpu_total: float
    self_device_total: float
    has_device: bool
    with_shapes: bool
    flops_scale: float | None  # None: no FLOPs column
    max_name: int


def _row_values(row: Any, layout: _Layout) -> list[object]:
    name = str(row.name)
    if len(name) >= layout.max_name - 3:
        name = name[: layout.max_name - 3] + "..."
    values: list[object] = [
        name,
        _share(row.self_cpu_us, layout.self_cpu_total),
        _time(row.self_cpu_us),
        _share(row.cpu_total_us, layout.self_cpu_total),
        _time(row.cpu_total_us),
        _time(row.cpu_avg_us),
    ]
    if layout.has_device:
        values += [
            _time(row.self_device_us),
            _share(row.self_device_us, layout.self_device_total),
            _time(row.device_total_us),
            _time(row.device_avg_us),
        ]
    values.append(int(row.calls))
    if layout.with_shapes:
        values.append(str(row.input_shapes or "")[: layout.widths[len(values)]])
    if layout.flops_scale is not None:
        flops = float(row.flops)
        values.append(f"{flops * layout.flops_scale:8.3f}" if flops > 0 else "--")
    return values


def format_table(
    ops_df: pd.DataFrame,
    sort_by: str = "self_cpu_us",
    row_limit: int = 100,
    device_name: str = "CUDA",
    max_name_column_width: int = 55,
    with_shapes: bool = False,
) -> str:
    """The key_averages table for ``self_vs_total`` output (``""`` when there are no ops).

    ``sort_by`` is one of our columns (``self_cpu_us``, ``device_total_us``, ...) or torch's
    key (``self_cpu_time_total``, ``cuda_time_total``, ...); sorting is descending and stable.
    Totals and percentages are over all rows, not just the ``row_limit`` printed.
    """
    if ops_df.empty:
        return ""
    rows = _sorted_rows(ops_df, sort_by)
    has_device = bool((rows["self_device_us"] > 0).any())
    name_width = min(int(rows["name"].str.len().max()) + 4, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    dev = device_name.upper()
    if has_device:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    headers.append("# of Calls")
    widths = [name_width] + [_WIDTH] * (len(headers) - 1)
    shapes = rows["input_shapes"].fillna("").astype(str) if with_shapes else None
    shown = shapes is not None and bool(shapes.str.len().gt(0).any())
    if shapes is not None and shown:
        headers.append("Input Shapes")
        widths.append(min(int(shapes.str.len().max()) + 4, 80))
    positive = rows["flops"][rows["flops"] > 0]
    flops_scale = None
    if len(positive):
        flops_scale, unit = _flops_scale(float(positive.min()))
        headers.append(f"Total {unit}")
        widths.append(_WIDTH)
    layout = _Layout(widths, float(rows["self_cpu_us"].sum()),
                     float(rows.loc[_device_rows(rows), "self_device_us"].sum()),
                     has_device, shown, flops_scale, max_name_column_width)

    row_format = "".join("{: >" + str(w) + "}" + " " * _SPACING for w in widths)
    separator = "".join("-" * w + " " * _SPACING for w in widths)
    lines = [separator, row_format.format(*headers), separator]
    lines += [row_format.format(*_row_values(row, layout))
              for row in rows.head(row_limit).itertuples(index=False)]
    lines.append(separator)
    lines.append(f"Self CPU time total: {_time(layout.self_cpu_total)}")
    if has_device:
        lines.append(f"Self {dev} time total: {_time(layout.self_device_total)}")
    return "\n".join(lines) + "\n"


def write_tables(trace_paths: Iterable[Path], run_dir: Path) -> list[Path]:
    """Render ``table.txt`` and ``ops.csv`` into ``run_dir`` from the given traces.

    All traces are summed into one table (one profile per schedule cycle or per rank).
    Each file is written to a temporary name in ``run_dir`` and renamed into place, so a
    reader sees the old file, the new file or none, never half a file. Returns both paths.
    Bad traces raise ``TraceError`` naming the file; nothing is written then.
    """
    ops = ops_for_traces(trace_paths)
    has_device = bool((ops["self_device_us"] > 0).any())
    sort_by = "device_total_us" if has_device else "self_cpu_us"
    table = format_table(ops, sort_by=sort_by)
    ordered = ops.sort_values(sort_by, ascending=False, kind="stable")[CSV_COLUMNS].copy()
    # FLOPs are counts: whole numbers, empty where none was recorded or estimated
    ordered["flops"] = [f"{v:.0f}" if v == v else "" for v in ordered["flops"].astype(float)]
    for column in ("name", "input_shapes"):
        ordered[column] = [_csv_text(v) for v in ordered[column]]
    csv_text = ordered.to_csv(index=False, float_format="%.3f", lineterminator="\n")
    run_dir = Path(run_dir)
    table_path = _write_atomic(run_dir / runfolder.TABLE_TXT, table)
    csv_path = _write_atomic(run_dir / runfolder.OPS_CSV, csv_text)
    return [table_path, csv_path]


def ops_for_traces(trace_paths: Iterable[Path]) -> pd.DataFrame:
    """``self_vs_total`` of several traces, summed per (name, lane) in first-seen order."""
    from autoprof.analysis.loader.decode import read_trace
    from autoprof.analysis.loader.events import build_events

    tables, shapes = [], []
    for path in trace_paths:
        # ranks are summed anyway, so each trace's own rank does not matter here
        table, counts = ops_and_shapes(build_events(read_trace(Path(path))))
        tables.append(table)
        shapes.append(counts)
    return merge_ops(tables, pd.concat(shapes, ignore_index=True) if shapes else None)


def merge_ops(tables: list[pd.DataFrame], shape_counts: pd.DataFrame | None = None
              ) -> pd.DataFrame:
    """Sum per-trace op tables. ``input_shapes`` comes from ``shape_counts`` (the traces'
    ``ops_and_shapes`` counts, concatenated) when given: the most common shapes over all
    traces and how many others; else it is taken from the table with most calls."""
    tables = [t for t in tables if not t.empty]
    if not tables:
        return self_vs_total_empty()
    if len(tables) == 1:
        return tables[0].reset_index(drop=True)
    both = pd.concat(tables, ignore_index=True)
    both["_order"] = np.arange(len(both))
    shapes = (
        both[both["input_shapes"].astype(bool)]
        .sort_values(["calls", "_order"], ascending=[False, True], kind="stable")
        .drop_duplicates(["name", "lane"])
        .set_index(["name", "lane"])["input_shapes"]
    )
    out = both.groupby(["name", "lane"], sort=False).agg(
        calls=("calls", "sum"),
        self_cpu_us=("self_cpu_us", "sum"),
        cpu_total_us=("cpu_total_us", "sum"),
        self_device_us=("self_device_us", "sum"),
        device_total_us=("device_total_us", "sum"),
        flops=("flops", lambda s: s.sum(min_count=1)),
    )
    described = shapes_text(shape_counts) if shape_counts is not None else shapes.to_dict()
    out["input_shapes"] = [described.get(k, "") for k in out.index]
    return out.reset_index()[OPS_COLUMNS]


def self_vs_total_empty() -> pd.DataFrame:
    """An ops table with no rows and the usual columns."""
    return pd.DataFrame({c: pd.Series(dtype=object) for c in OPS_COLUMNS})


def _csv_text(value: object) -> object:
    """A text cell a spreadsheet would run as a formula (``=cmd()``, ``@SUM(...)``) gets a
    leading ``'``, which spreadsheets read as "this is text"; other values are unchanged.

    A carriage return becomes a newline: Python's csv writer quotes a cell holding a newline
    but not one holding a lone CR, which spreadsheets read as the end of the row (and the
    text after it as a new row's first cell, unprefixed)."""
    if not isinstance(value, str):
        return value
    text = value.replace("\r\n", "\n").replace("\r", "\n")
    return "'" + text if value.startswith(_FORMULA_STARTS) else text


def _write_atomic(path: Path, text: str) -> Path:
    runfolder.atomic_write_text(path, text)
    return path


def _with_averages(ops_df: pd.DataFrame) -> pd.DataFrame:
    rows = ops_df.copy()
    calls = rows["calls"].astype(float).where(rows["calls"] > 0)
    rows["cpu_avg_us"] = (rows["cpu_total_us"] / calls).fillna(0.0)
    rows["device_avg_us"] = (rows["device_total_us"] / calls).fillna(0.0)
    if "input_shapes" not in rows:
        rows["input_shapes"] = ""
    if "flops" not in rows:
        rows["flops"] = np.nan
    return rows


def _device_rows(rows: pd.DataFrame) -> pd.Series:
    """Rows whose Self device time is device work itself (torch's footer sums only these)."""
    if "lane" in rows:
        return rows["lane"] == "gpu"
    return (rows["cpu_total_us"] == 0) & (rows["self_device_us"] > 0)


def _time(time_us: float) -> str:
    """torch's _format_time."""
    if time_us >= 1_000_000.0:
        return f"{time_us / 1_000_000.0:.3f}s"
    if time_us >= 1000.0:
        return f"{time_us / 1000.0:.3f}ms"
    return f"{time_us:.3f}us"


def _share(time_us: float, total_us: float) -> str:
    """torch's _format_time_share."""
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _flops_scale(smallest: float) -> tuple[float, str]:
    """torch's auto_scale_flops: the unit of the smallest positive count."""
    level = max(0.0, min(math.log10(smallest) / 3, float(len(_FLOPS_UNITS) - 1)))
    return 10 ** (math.floor(level) * -3.0), _FLOPS_UNITS[int(level)]
