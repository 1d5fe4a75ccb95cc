"""Compare: the diff of the first two chosen runs (the selected run against the next), then
the runs side by side on a log axis, and a size sweep of CPU vs GPU time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

import autoprof.analysis as analysis
from autoprof.analysis import Run
from autoprof.analysis.analysis import record_of
from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer._text import md_escape
from autoprof.viewer.views._common import device_name, no_folder, readable, show_error
from autoprof.viewer.views.compare_diff import render_diff

PER_STEP = (("step_cpu_span_us_median", "CPU per step"),
            ("step_gpu_work_us_median", "GPU work per step"))
_NOT_DISTINGUISHING = frozenset({"name", "out_dir"})  # options that say nothing about the run


def render(ctx: Context) -> None:
    st.title("Compare")
    if no_folder(ctx):
        return
    if not ctx.compared:
        st.info("Choose two or more runs under 'Runs to compare' in the sidebar.")
        return
    good = [(c, run) for c in ctx.compared if (run := c.one_table) is not None]
    for bad in (c for c in ctx.compared if not c.ok):
        show_error(f"{bad.label}: could not be loaded, left out.", bad.error or "")
    for label, big in ((c.label, a) for c in ctx.compared if (a := c.rank_by_rank) is not None):
        st.info(md_escape(f"{label}: analysed rank by rank ({len(big.ranks)} ranks), "
                          "left out: its Overview and Ranks pages show it."))
    if not good:
        return
    runs = [run for _, run in good]
    table = analysis.compare(runs).copy()
    table.insert(0, "run", labels(table, runs))
    if ctx.current is not None and good[0][0].path == ctx.current.path:
        table.loc[0, "run"] += " (selected)"
    table["path"] = [_relative(p, ctx) for p in table["path"]]
    if len(runs) >= 2:
        render_diff(runs[1], runs[0], table["run"].iloc[1], table["run"].iloc[0])
        st.subheader("Side by side")
    st.altair_chart(
        _charts.grouped_bars(table, "run", [c for c, _ in PER_STEP], [t for _, t in PER_STEP],
                             "Median time per profiled step", "time per step", log=True),
        width="stretch",
    )
    st.caption("Log axis: a bar one decade shorter is a run ten times faster. Runs of one "
               "function are told apart by their problem size and the options they differ in.")
    drew = False
    for (name, device), rows in sweeps(table, runs):
        _sweep(rows, f"{name} on {device}")
        drew = True
    if not drew and len(good) >= 2:
        st.caption("Size sweep: pick two or more runs of the same function (same name) on "
                   "the same device with different problem sizes to see CPU vs GPU time per "
                   "size.")
    st.dataframe(readable(table.drop(columns=["name"])), hide_index=True, width="stretch")


def sweeps(table: pd.DataFrame, runs: list[Run]) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """The rows of each (function, device) with two or more problem sizes: one sweep each,
    so a CPU run and an H200 run of one function are never drawn on one line."""
    keys = [(str(run.name), device_name(run)) for run in runs]
    out = []
    for key in dict.fromkeys(keys):
        mine = pd.Series([k == key for k in keys], index=table.index)
        rows = table[mine & table["size"].notna()]
        if rows["size"].nunique() >= 2:
            out.append((key, rows))
    return out


def labels(table: pd.DataFrame, runs: list[Run]) -> list[str]:
    """Each run's name, plus what tells it from the other runs of that name: the device,
    the problem size (or input shapes), then the autoprof options that differ, then the run
    id. The chart draws labels whole (no length limit), so the telling part is never cut."""
    out = []
    for i, run in enumerate(runs):
        same = [j for j, other in enumerate(runs) if other.name == run.name]
        parts = [str(run.name)]
        if len(same) > 1:
            parts += _differences(table, runs, i, same)
        out.append(" · ".join(parts))
    for i, label in enumerate(out):
        if out.count(label) > 1:
            out[i] = f"{label} · {Path(str(runs[i].path)).name}"
    return out


def _differences(table: pd.DataFrame, runs: list[Run], i: int, same: list[int]) -> list[str]:
    parts = []
    devices = {device_name(runs[j]) for j in same}
    if len(devices) > 1:
        parts.append(device_name(runs[i]))
    sizes = {str(table["size"].iloc[j]) for j in same}
    dims = {str(table["input_dims"].iloc[j]) for j in same}
    if len(sizes) > 1 and pd.notna(table["size"].iloc[i]):
        parts.append(f"n={table['size'].iloc[i]:g}")
    elif len(dims) > 1:
        parts.append(str(table["input_dims"].iloc[i]))
    options = [_options(runs[j]) for j in same]
    for key in sorted(set().union(*options) - _NOT_DISTINGUISHING):
        if len({json.dumps(o.get(key), sort_keys=True, default=str) for o in options}) > 1:
            parts.append(f"{key}={json.dumps(_options(runs[i]).get(key), default=str)}")
    return parts


def _options(run: Run) -> dict[str, Any]:
    record = record_of(run)
    return record.options if record is not None else {}


def _sweep(rows: pd.DataFrame, group: str) -> None:
    st.altair_chart(
        _charts.sweep(rows.sort_values("size"), "size", [c for c, _ in PER_STEP],
                      [label for _, label in PER_STEP],
                      f"Size sweep of {group}: CPU vs GPU per step", "median time per step"),
        width="stretch",
    )
    st.caption("Where the GPU line rises above the CPU line, launch overhead gives way to "
               "compute: below that size the GPU waits for the host.")


def _relative(path: object, ctx: Context) -> str:
    try:
        return str(Path(str(path)).resolve().relative_to(ctx.root))
    except ValueError:
        return str(path)
