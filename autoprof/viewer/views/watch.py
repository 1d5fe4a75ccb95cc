"""A watched function's step time over all its calls, its triggered windows marked (the
healthy run folder's ``watch.json``); drawn on the Steps page of the healthy window and of
every triggered one."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from autoprof.analysis.diff.triggered import lead, trigger_of
from autoprof.analysis.run import Run
from autoprof.runfolder import watchfile
from autoprof.viewer._text import md_escape

KIND_COLORS = {"drift": "#e45756", "manual": "#4c78a8", "signal": "#b279a2",
               "call": "#54a24b", "peer": "#f58518"}


def comparison(run: Run) -> None:
    """A triggered window's page leads with its comparison against its healthy window (the
    summary's lead, as plain text: op names are never read as markup): the banner names the
    trigger and the untraced verdict; nothing for another run."""
    triggered = trigger_of(run)
    if triggered is None:
        return
    found = lead(run)
    verdict = "" if found is None else (
        f" Untraced step time: **{md_escape(found.untraced.verdict)}**.")
    st.warning(f"**Triggered window {triggered.window}**: "
               f"{md_escape(triggered.describe())}; compared below with the healthy window "
               f"{md_escape(triggered.healthy_run_id)}.{verdict}")
    if found is not None:
        st.code(found.text(), language=None)


def render(run_path: Path) -> None:
    """The section, when the run was watched (else nothing)."""
    path = watchfile.find(run_path) if run_path.is_dir() else None
    log = watchfile.read(path) if path is not None else None
    if log is None:
        return
    st.subheader("Step time over the job (watched)")
    if not log.points:
        st.info("Watched, but no step time was kept yet (the job ended soon after its first "
                "window).")
        return
    st.altair_chart(chart(log), width="stretch")
    st.caption(_caption(log))
    if log.windows:
        st.dataframe(windows_table(log), hide_index=True, width="stretch")


def points_frame(log: watchfile.WatchLog) -> pd.DataFrame:
    return pd.DataFrame(list(log.points), columns=["call", "step_ms"])


def windows_table(log: watchfile.WatchLog) -> pd.DataFrame:
    return pd.DataFrame([{"window": i + 1, "at call": w.at_call, "trigger": w.kind,
                          "calls": w.calls, "run": w.run_id or "(recording)"}
                         for i, w in enumerate(log.windows)])


def chart(log: watchfile.WatchLog) -> alt.LayerChart:
    """The step time as a line over the call numbers; each window a vertical rule colored by
    what triggered it, the first window a grey band."""
    line = alt.Chart(points_frame(log)).mark_line(point=len(log.points) < 60).encode(
        x=alt.X("call:Q", title="call"),
        y=alt.Y("step_ms:Q", title="step time (ms)"),
        tooltip=[alt.Tooltip("call:Q"), alt.Tooltip("step_ms:Q", format=".4g")])
    first = alt.Chart(pd.DataFrame([{"start": 1, "end": max(1, log.first_window_calls),
                                     "what": "first window"}])).mark_rect(
        opacity=0.15, color="grey").encode(x="start:Q", x2="end:Q",
                                           tooltip=[alt.Tooltip("what:N")])
    layers: list[alt.Chart] = [first, line]
    if log.windows:
        marks = pd.DataFrame([{"call": w.at_call, "trigger": w.kind, "run": w.run_id or ""}
                              for w in log.windows])
        scale = alt.Scale(domain=list(KIND_COLORS), range=list(KIND_COLORS.values()))
        layers.append(alt.Chart(marks).mark_rule(strokeWidth=2).encode(
            x="call:Q", color=alt.Color("trigger:N", scale=scale, title="window"),
            tooltip=[alt.Tooltip("call:Q"), alt.Tooltip("trigger:N"), alt.Tooltip("run:N")]))
    return alt.LayerChart(layer=layers, title="Step time of every watched call", height=260)


def _caption(log: watchfile.WatchLog) -> str:
    each = ("each point one call's step time" if log.width_calls == 1 else
            f"each point the mean step time of {log.width_calls:,} consecutive calls")
    clock = ("on the device: CUDA events at the calls' starts"
             if log.clock == watchfile.DEVICE_CLOCK else "on the host clock")
    return (f"{md_escape(log.name)}: {log.calls:,} calls; {each} (the time from one call's "
            f"start to the next one's, the loop included, {clock}); the grey band is the first "
            "window, the rules the triggered windows. The healthy window is "
            f"{md_escape(log.healthy_run_id)}.")
