"""Compare: runs side by side, and a size sweep of CPU vs GPU time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer._memo import across
from autoprof.viewer.views._common import call, no_folder, show_error

CPU_COLS = ("self_cpu_us", "cpu_us", "cpu_time_us")
GPU_COLS = ("self_gpu_us", "gpu_us", "gpu_time_us", "self_device_us")
SIZE_COLS = ("size", "n", "problem_size")


def render(ctx: Context) -> None:
    st.title("Compare")
    if no_folder(ctx):
        return
    if not ctx.compared:
        st.info("Choose two or more runs under 'Runs to compare' in the sidebar.")
        return
    good = [c for c in ctx.compared if c.ok]
    for bad in (c for c in ctx.compared if not c.ok):
        show_error(f"{bad.label}: could not be loaded, left out.", bad.error or "")
    if not good:
        return
    import autoprof.analysis as analysis

    runs = [c.run for c in good]
    table: pd.DataFrame | None = call("Compare", lambda: across(analysis.compare, runs))
    if table is None:
        return
    table = table.copy()
    if "name" not in table.columns and len(table) == len(good):
        table.insert(0, "name", [c.label for c in good])
    if "path" in table.columns:
        table["path"] = [_relative(p, ctx) for p in table["path"]]
    key = "name" if "name" in table.columns else None
    cpu = _first(table, CPU_COLS)
    gpu = _first(table, GPU_COLS)
    if key and cpu and gpu:
        st.altair_chart(
            _charts.grouped_bars(table, key, [cpu, gpu], ["self CPU", "self GPU"],
                                 "Self CPU vs self GPU time per run", "time (µs)"),
            width="stretch",
        )
    size = _first(table, SIZE_COLS)
    drew = False
    if size and len(table) == len(good):
        groups = pd.Series([str(getattr(c.run, "name", "") or "") for c in good],
                           index=table.index)
        for group in dict.fromkeys(groups):
            rows = table[(groups == group) & table[size].notna()]
            if rows[size].nunique() >= 2:
                _sweep(rows, size, group)
                drew = True
    if not drew and len(good) >= 2:
        st.caption("Size sweep: pick two or more runs of the same function (same name) with "
                   "different problem sizes to see CPU vs GPU time per size.")
    st.dataframe(table, hide_index=True, width="stretch")


SWEEP_COLS = (("step_cpu_span_us_median", "CPU per step"),
              ("step_gpu_work_us_median", "GPU work per step"))


def _sweep(rows: pd.DataFrame, size: str, group: str) -> None:
    cols = [(c, label) for c, label in SWEEP_COLS if c in rows.columns]
    if len(cols) < 2:
        return
    st.altair_chart(
        _charts.sweep(rows.sort_values(size), size, [c for c, _ in cols],
                      [label for _, label in cols], f"Size sweep of {group}: CPU vs GPU per step",
                      "median time per step (µs, log)"),
        width="stretch",
    )
    st.caption("Where the GPU line rises above the CPU line, launch overhead gives way to "
               "compute: below that size the GPU waits for the host.")


def _relative(path: object, ctx: Context) -> str:
    try:
        return str(Path(str(path)).resolve().relative_to(ctx.root))
    except ValueError:
        return str(path)


def _first(df: pd.DataFrame, names: tuple[str, ...]) -> Any:
    return next((c for c in names if c in df.columns), None)

