"""Compare: runs side by side, and a size sweep of CPU vs GPU time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from viewer import _charts
from viewer._context import Context, context
from viewer._memo import across
from viewer.views._common import call, no_folder, show_error

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
    if size and cpu and gpu and table[size].notna().sum() >= 2:
        st.altair_chart(
            _charts.sweep(table.dropna(subset=[size]), size, [cpu, gpu],
                          ["self CPU", "self GPU"], "Size sweep: CPU vs GPU time per size",
                          "time (µs, log)"),
            width="stretch",
        )
        st.caption("Where the GPU line crosses above the CPU line, overhead gives way to "
                   "compute.")
    elif len(good) >= 2:
        st.caption("No size column in the comparison: the size sweep chart needs runs that "
                   "record their problem size.")
    st.dataframe(table, hide_index=True, width="stretch")


def _relative(path: object, ctx: Context) -> str:
    try:
        return str(Path(str(path)).resolve().relative_to(ctx.root))
    except ValueError:
        return str(path)


def _first(df: pd.DataFrame, names: tuple[str, ...]) -> Any:
    return next((c for c in names if c in df.columns), None)


if __name__ == "__main__":
    render(context())
