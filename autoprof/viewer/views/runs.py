"""Runs: every run under the traces folder with its verdict, failed and incomplete ones
included."""

from __future__ import annotations

import streamlit as st

from autoprof.viewer._context import Context
from autoprof.viewer._loading import summaries
from autoprof.viewer._runlist import EXAMPLES, display_table, run_paths
from autoprof.viewer._text import md_escape
from autoprof.viewer.views._common import no_folder, show_error

ROW_PX, HEADER_PX = 35, 38


def render(ctx: Context) -> None:
    st.title("Runs")
    if no_folder(ctx):
        return
    if ctx.runs_error:
        show_error("The traces folder could not be listed.", ctx.runs_error)
        return
    if ctx.runs is None or not len(ctx.runs):
        st.caption(f"Traces folder: {md_escape(ctx.root)}")
        st.info("No runs in this folder yet. Decorate a function with @autoprof and call it, or "
                "open any torch.profiler trace with 'Trace by path' / 'Upload' in the sidebar.")
        return
    slot = st.empty()
    bar = slot.progress(0.0, text="Summarising runs")
    found = summaries(ctx.root, run_paths(ctx.runs),
                      lambda frac, text: bar.progress(frac, text=text))
    slot.empty()
    table = display_table(ctx.runs, ctx.root, found)
    n_bad = int((table["status"].isin(["failed", "partial", "recording"])).sum())
    examples = int((table["example"] != "").sum())
    st.caption(f"{len(table)} runs in {md_escape(ctx.root)}, newest first"
               + (f"; {n_bad} not complete" if n_bad else "")
               + (f"; {examples} under {EXAMPLES}/ are examples shipped with autoprof"
                  if examples else "")
               + ". Pick one in the sidebar to see why.")
    shown = table if table["error"].ne("").any() else table.drop(columns=["error"])
    if not examples:
        shown = shown.drop(columns=["example"])
    st.dataframe(
        shown, hide_index=True, width="stretch", height=HEADER_PX + ROW_PX * min(len(shown), 20),
        column_config={
            "why": st.column_config.TextColumn("why", width="large"),
            "run": st.column_config.TextColumn("run", width="medium"),
            "size": st.column_config.TextColumn("size", width="small"),
        },
    )
    for _, row in table[table["error"] != ""].iterrows():
        show_error(f"{row['run']}: {row['status'] or 'error'}", str(row["error"]))
