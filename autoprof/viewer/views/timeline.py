"""Timeline: CPU and GPU lanes of the profiled steps, launch links, idle GPU gaps."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from autoprof.analysis import Overhead, Run
from autoprof.units import fmt_us
from autoprof.viewer import _charts
from autoprof.viewer._context import Context
from autoprof.viewer._paths import inside
from autoprof.viewer._text import md_escape
from autoprof.viewer.views import breakdown
from autoprof.viewer.views._common import current_run, dash

MAX_DRAWN = 2500
MAX_DEPTH = 12  # CPU nesting levels drawn as their own lanes; deeper ones share the last
_NEEDED = ("name", "cat", "lane", "ts_us", "dur_us", "end_us", "tid", "depth", "device",
           "stream", "step", "launch_row", "rank")


def _overhead(run: Run, rank: int) -> Overhead:
    """The rank's overhead picture: the run's own (computed once) when it has one rank."""
    return run.overhead() if run.world_size <= 1 else run.overhead(rank=rank)


def render(ctx: Context) -> None:
    run = current_run(ctx, "Timeline")
    if run is None:
        return
    events = run.events
    if not len(events):
        st.info("This trace has no events to draw.")
    else:
        _draw(run, events[list(_NEEDED)])
    _downloads(ctx, run)


def _pick_rows(events: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    ranks = sorted(int(r) for r in events["rank"].unique())
    rank = ranks[0]
    if len(ranks) > 1:
        rank = int(st.selectbox("Rank", ranks, key="tl_rank"))
    ev = events[events["rank"] == rank]
    steps = sorted(int(s) for s in ev["step"].unique() if s >= 0)
    if steps:
        lo, hi = steps[0], steps[-1]
        if len(steps) > 1:
            lo, hi = st.select_slider("Profiled steps to draw", steps, value=(lo, hi),
                                      key="tl_steps")
        ev = ev[(ev["step"] >= lo) & (ev["step"] <= hi)]
        where = f"steps {lo}-{hi}" if lo != hi else f"step {lo}"
    else:
        where = "the whole trace (no ProfilerStep markers)"
    return ev, where


def _lane_keys(ev: pd.DataFrame) -> pd.Series:
    depth = ev["depth"].clip(lower=0, upper=MAX_DEPTH)
    cpu = "CPU thread " + ev["tid"].astype("int64").astype(str) + " L" + depth.astype(str)
    gpu_annot = ev["cat"] == "gpu_user_annotation"
    gpu = ("GPU " + ev["device"].astype("int64").astype(str) + " stream "
           + ev["stream"].astype("int64").astype(str))
    gpu = gpu.where(~gpu_annot, "GPU " + ev["device"].astype("int64").astype(str) + " annotations")
    return cpu.where(ev["lane"] == "cpu", gpu)


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders the numbers inside a text by value: L2 before L10."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in re.split(r"(\d+)", text) if part)


def lane_order(lanes: list[str]) -> list[str]:
    """CPU lanes first, then GPU lanes, each in natural order (thread, then level L0, L1,
    ..., L10; device, then stream)."""
    return sorted(lanes, key=lambda s: (not s.startswith("CPU"), natural_key(s)))


def whole_steps(ev: pd.DataFrame, cap: int) -> tuple[pd.DataFrame, str]:
    """The leading whole steps of `ev` whose events fit in `cap` (at least the first step),
    and the line saying what was left out ("" when nothing was). Events of a trace without
    steps, or of one step larger than `cap`, are cut by start time instead."""
    ev = ev.sort_values("ts_us", kind="stable")
    total = len(ev)
    if total <= cap:
        return ev, ""
    per_step = ev["step"].value_counts().sort_index()
    steps = [int(s) for s in per_step.index if s >= 0]
    kept = [s for s, n in zip(steps, per_step.loc[steps].cumsum(), strict=True) if n <= cap]
    if not kept:
        first = steps[0] if steps else None
        head = (ev[ev["step"] == first] if first is not None else ev).head(cap)
        what = f"step {first}" if first is not None else "the trace"
        return head, (f"Drawing the first {cap:,} events of {what} by start time "
                      f"({total:,} events in all): one step holds more than {cap:,}. Open "
                      "the trace in Perfetto for all of it.")
    drawn = ev[ev["step"].isin(kept)]
    shown = f"step {kept[0]}" if len(kept) == 1 else f"steps {kept[0]}-{kept[-1]}"
    return drawn, (f"Drawing {shown} whole ({len(drawn):,} events) of the {len(steps)} "
                   f"chosen steps ({total:,} events): at most {cap:,} events are drawn, in "
                   "whole steps. Pick later steps with the slider, or open the trace in "
                   "Perfetto for all of it.")


def _steps_drawn(ev: pd.DataFrame, where: str) -> str:
    """'steps 2-3' for the steps `ev` holds; `where` unchanged when it holds no step."""
    steps = sorted(int(s) for s in ev["step"].unique() if s >= 0)
    if not steps:
        return where
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"


def _draw(run: Run, events: pd.DataFrame) -> None:
    ev, where = _pick_rows(events)
    ev, cut = whole_steps(ev, MAX_DRAWN)
    if cut:
        st.warning(cut)
        where = _steps_drawn(ev, where)
    else:
        st.caption(f"{len(ev):,} events of {where}. Drag to pan, scroll to zoom; hover for "
                   "names. CPU lanes: one per thread and nesting level (L0 = outermost); "
                   "regions (record_function, ProfilerStep) carry their names.")
    lanes_of_rows = _lane_keys(ev)
    lanes = lane_order([str(x) for x in lanes_of_rows.unique()])
    index = {name: i for i, name in enumerate(lanes)}
    t0 = float(ev["ts_us"].min())
    spans = pd.DataFrame({
        "row": lanes_of_rows.map(index).astype(int),
        "start_us": ev["ts_us"] - t0,
        "end_us": ev["end_us"] - t0,
        "dur_us": ev["dur_us"],
        "name": ev["name"].astype(str),
        "cat": ev["cat"].astype(str),
        "lane": lanes_of_rows,
    })
    links = _links(ev, lanes_of_rows, index, t0)
    gaps, gap_note = _gaps(run, ev, index, t0) if (ev["lane"] == "gpu").any() else (None, "")
    chart = _charts.timeline(spans, lanes, links, gaps, title=f"Timeline of {where}")
    st.altair_chart(chart, width="stretch", height=_charts.timeline_height(len(lanes)))
    if not (ev["lane"] == "gpu").any():
        st.caption("No GPU activity in these steps: CPU lanes only.")
        return
    st.caption("Dashed lines link each kernel to the CPU call that launched it. " + gap_note)
    over = _overhead(run, int(ev["rank"].iloc[0]))
    c = st.columns(3)
    c[0].metric("Launch latency p50", dash(fmt_us(over.launch_latency_us_p50)))
    c[1].metric("p90", dash(fmt_us(over.launch_latency_us_p90)))
    c[2].metric("max", dash(fmt_us(over.launch_latency_us_max)))


def _links(ev: pd.DataFrame, lanes_of_rows: pd.Series, index: dict[str, int],
           t0: float) -> pd.DataFrame | None:
    gpu = ev[(ev["launch_row"] >= 0) & ev["launch_row"].isin(ev.index)]
    if not len(gpu):
        return None
    launch = ev.loc[gpu["launch_row"].to_numpy()]
    return pd.DataFrame({
        "x_us": launch["ts_us"].to_numpy() - t0,
        "x2_us": gpu["ts_us"].to_numpy() - t0,
        "row": lanes_of_rows.loc[launch.index].map(index).to_numpy(),
        "row2": lanes_of_rows.loc[gpu.index].map(index).to_numpy(),
        "name": gpu["name"].astype(str).to_numpy(),
    })


def _gap_table(run: Run, rank: int) -> tuple[pd.DataFrame | None, str]:
    """Idle GPU stretches coloured by host bucket, else the largest idle gap."""
    by_bucket = breakdown.idle_gaps(run, rank)
    if len(by_bucket):
        return by_bucket, "Bands colour the idle GPU time by what the host was doing."
    over = _overhead(run, rank)
    at, length = over.idle_gap_max_at_us, over.idle_gap_max_us
    if at is None or not length:
        return None, "No idle GPU gap inside the steps was reported."
    note = (f"The red band marks the largest idle GPU gap ({fmt_us(length)}); the analysis "
            f"counts {over.idle_gaps:,} idle gaps of {fmt_us(over.idle_gap_total_us)} in total "
            "inside the steps.")
    return pd.DataFrame({"start_us": [float(at)], "end_us": [float(at) + float(length)]}), note


def _gaps(run: Run, ev: pd.DataFrame, index: dict[str, int],
          t0: float) -> tuple[pd.DataFrame | None, str]:
    table, note = _gap_table(run, int(ev["rank"].iloc[0]))
    gpu_rows = [i for name, i in index.items() if name.startswith("GPU") and "annot" not in name]
    if table is None or not gpu_rows or not len(table):
        return None, note
    lo, hi = float(ev["ts_us"].min()), float(ev["end_us"].max())
    g = table[(table["end_us"] > lo) & (table["start_us"] < hi)]
    if not len(g):
        return None, note + " (outside the drawn events)"
    out = [pd.DataFrame({"start_us": g["start_us"] - t0, "end_us": g["end_us"] - t0, "row": r,
                         "bucket": g["bucket"] if "bucket" in g else "idle"})
           for r in gpu_rows]
    return pd.concat(out, ignore_index=True), note


def _downloads(ctx: Context, run: Run) -> None:
    st.subheader("The full trace")
    paths = [p for p in run.trace_paths if isinstance(p, Path)]  # the viewer opens local runs
    if not paths:
        st.write("No trace file recorded for this run.")
    for i, p in enumerate(paths):
        allowed = ctx.current is not None and p.resolve() == ctx.current.path.resolve()
        if not allowed:
            try:
                inside(ctx.root, p)
                allowed = True
            except (OSError, ValueError):
                allowed = False
        if not allowed:
            st.text(f"{p.name}: outside the traces folder, not offered for download")
            continue
        st.download_button(f"Download {md_escape(p.name)}", _reader(p), file_name=p.name,
                           mime="application/octet-stream", key=f"dl_trace_{i}",
                           on_click="ignore")
    st.markdown(
        "To see every event: open [ui.perfetto.dev](https://ui.perfetto.dev) and drag the "
        "downloaded file onto it (Perfetto reads `.json` and `.json.gz` torch traces and keeps "
        "the file in your browser). On a closed network the Perfetto page itself cannot load; "
        "use a locally hosted Perfetto UI, or `chrome://tracing` in Chromium."
    )


def _reader(path: Path) -> Any:
    def read() -> bytes:
        return path.read_bytes()

    return read

