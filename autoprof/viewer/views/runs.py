"""Runs: every run under the traces folder, failed and incomplete ones included."""

from __future__ import annotations

import streamlit as st

from autoprof.viewer._context import Context
from autoprof.viewer._runlist import display_table
from autoprof.viewer._text import md_escape
from autoprof.viewer.views._common import no_folder, show_error


def render(ctx: Context) -> None:
    st.title("Runs")
    st.caption(f"Traces folder: {md_escape(ctx.root)}")
    if no_folder(ctx):
        return
    if ctx.runs_error:
        show_error("The traces folder could not be listed.", ctx.runs_error)
        return
    if ctx.runs is None or not len(ctx.runs):
        st.info("No runs in this folder yet. Decorate a function with @autoprof and call it, or "
                "open any torch.profiler trace with 'Trace by path' / 'Upload' in the sidebar.")
        return
    table = display_table(ctx.runs, ctx.root, ctx.verdicts)
    n_bad = int((table["status"] != "complete").sum()) if "status" in table.columns else 0
    st.write(f"{len(table)} runs, {n_bad} not complete (failed, partial or still recording). "
             "Pick one in the sidebar.")
    st.dataframe(table, hide_index=True, width="stretch")
    if "error" in table.columns:
        errs = table[table["error"].astype(str).str.len() > 0]
        errs = errs[~errs["error"].isna()] if len(errs) else errs
        for _, row in errs.iterrows():
            show_error(f"{row.get('name', '')}: {row.get('status') or 'error'}", str(row["error"]))

