"""Altair chart builders: DataFrame (contract column names) in, chart out. No statistics.

Field names given to Vega-Lite are our own plain column names; user text (op names) only
ever appears as data values, which Vega draws as SVG text.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

SELF = "Self"
TOTAL = "Total"
_LANE_COLORS = {"cpu": "#4c78a8", "gpu": "#f58518"}
# Kineto categories keep one color on every run; others take the spare colors in order.
CATEGORY_COLORS = {
    "cpu_op": "#4c78a8", "user_annotation": "#72b7b2", "python_function": "#9d755d",
    "cuda_runtime": "#e45756", "cuda_driver": "#ff9da6", "kernel": "#f58518",
    "gpu_memcpy": "#b279a2", "gpu_memset": "#eeca3b", "gpu_user_annotation": "#bab0ac",
}
_SPARE_COLORS = ("#54a24b", "#88d27a", "#d67195", "#79706e", "#bcbddc", "#9ecae9")


def category_scale(categories: Sequence[str]) -> alt.Scale:
    """Fixed colors for the known Kineto categories present, spare ones for the rest."""
    cats = sorted(set(categories), key=lambda c: (c not in CATEGORY_COLORS, c))
    spare = iter(_SPARE_COLORS * (len(cats) // len(_SPARE_COLORS) + 1))
    return alt.Scale(domain=cats, range=[CATEGORY_COLORS.get(c) or next(spare) for c in cats])


def _short(names: pd.Series, width: int = 60) -> pd.Series:
    return names.astype(str).map(lambda s: s if len(s) <= width else s[: width - 1] + "…")


def self_vs_total(
    ops: pd.DataFrame, self_col: str, total_col: str, title: str, top_n: int = 15
) -> alt.Chart:
    """Grouped horizontal bars: Self and total time per op (µs), largest total first.

    `ops` holds `name`, `calls`, `self_col`, `total_col`; the caller picks the rows.
    """
    top = ops.nlargest(top_n, total_col)[["name", "calls", self_col, total_col]].copy()
    top["op"] = _short(top["name"])
    long = top.melt(
        id_vars=["op", "name", "calls"],
        value_vars=[self_col, total_col],
        var_name="measure",
        value_name="time_us",
    )
    long["measure"] = long["measure"].map({self_col: SELF, total_col: TOTAL})
    order = top.sort_values(total_col, ascending=False)["op"].tolist()
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("op:N", sort=order, title=None, axis=alt.Axis(labelLimit=320)),
            x=alt.X("time_us:Q", title="time (µs)"),
            color=alt.Color(
                "measure:N",
                scale=alt.Scale(domain=[SELF, TOTAL], range=["#e45756", "#9ecae9"]),
                title=None,
            ),
            yOffset=alt.YOffset("measure:N", sort=[SELF, TOTAL]),
            tooltip=[
                alt.Tooltip("name:N", title="op"),
                alt.Tooltip("measure:N"),
                alt.Tooltip("time_us:Q", title="time (µs)", format=",.2f"),
                alt.Tooltip("calls:Q", format=","),
            ],
        )
        .properties(title=title, height=alt.Step(9))
    )


def balance(df: pd.DataFrame) -> alt.Chart:
    """One horizontal bar per side (`side`, `time_us`): where the profiled time went."""
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=alt.Y("side:N", title=None, sort=["Self CPU", "Self GPU"]),
            x=alt.X("time_us:Q", title="time (µs)"),
            color=alt.Color("side:N", legend=None,
                            scale=alt.Scale(domain=["Self CPU", "Self GPU"],
                                            range=[_LANE_COLORS["cpu"], _LANE_COLORS["gpu"]])),
            tooltip=["side:N", alt.Tooltip("time_us:Q", title="time (µs)", format=",.2f")],
        )
        .properties(title="Self CPU vs self GPU time in the profiled steps",
                    height=alt.Step(30))
    )


def bars(
    df: pd.DataFrame,
    x: str,
    y: str,
    title: str,
    y_title: str,
    color: str | None = None,
    x_title: str | None = None,
    tooltip: Sequence[str] = (),
    colors: dict[str, str] | None = None,
) -> alt.Chart:
    """Vertical bars of `y` per `x` (x is ordinal), optionally colored by a column
    (`colors`: fixed color per value)."""
    enc: dict[str, object] = {
        "x": alt.X(f"{x}:O", title=x_title or x, axis=alt.Axis(labelAngle=0)),
        "y": alt.Y(f"{y}:Q", title=y_title),
        "tooltip": [alt.Tooltip(f"{x}:O")] + [alt.Tooltip(c) for c in (y, *tooltip)],
    }
    if color:
        scale = (alt.Scale(domain=list(colors), range=list(colors.values())) if colors
                 else alt.Undefined)
        enc["color"] = alt.Color(f"{color}:N", title=None, scale=scale)
    return alt.Chart(df).mark_bar().encode(**enc).properties(title=title, height=260)


def grouped_bars(
    df: pd.DataFrame, x: str, value_cols: Sequence[str], labels: Sequence[str], title: str,
    y_title: str,
) -> alt.Chart:
    """Bars of several measures side by side per `x` (e.g. self CPU vs self GPU per run)."""
    long = df[[x, *value_cols]].melt(id_vars=[x], var_name="measure", value_name="value")
    long["measure"] = long["measure"].map(dict(zip(value_cols, labels, strict=True)))
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X(f"{x}:N", title=None, sort=None,
                    axis=alt.Axis(labelLimit=180, labelAngle=-30, labelOverlap=False)),
            xOffset=alt.XOffset("measure:N"),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color("measure:N", title=None),
            tooltip=[alt.Tooltip(f"{x}:N"), "measure:N", alt.Tooltip("value:Q", format=",.2f")],
        )
        .properties(title=title, height=280)
    )


def sweep(df: pd.DataFrame, size_col: str, value_cols: Sequence[str], labels: Sequence[str],
          title: str, y_title: str) -> alt.Chart:
    """Lines of several measures against a problem size, both axes logarithmic."""
    long = df[[size_col, *value_cols]].melt(
        id_vars=[size_col], var_name="measure", value_name="value"
    )
    long["measure"] = long["measure"].map(dict(zip(value_cols, labels, strict=True)))
    long = long[long["value"] > 0]
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{size_col}:Q", scale=alt.Scale(type="log", base=2), title="size"),
            y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=y_title),
            color=alt.Color("measure:N", title=None),
            tooltip=[alt.Tooltip(f"{size_col}:Q", title="size"), "measure:N",
                     alt.Tooltip("value:Q", format=",.2f")],
        )
        .properties(title=title, height=320)
    )


def timeline_height(n_lanes: int) -> int:
    """Pixels for a timeline of `n_lanes` lanes (Streamlit needs it given explicitly)."""
    return max(160, 32 * n_lanes + 60)


def _js_str(text: str) -> str:
    """A Vega expression string literal holding `text` (lane labels are ours, but be strict)."""
    kept = "".join(c for c in text if c.isalnum() or c in " .:/#-_()")
    return "'" + kept + "'"


def timeline(
    spans: pd.DataFrame,
    lanes: Sequence[str],
    links: pd.DataFrame | None = None,
    gaps: pd.DataFrame | None = None,
    title: str = "Timeline",
) -> alt.LayerChart | alt.FacetChart:
    """Lanes of spans against time.

    `spans`: `row` (lane index into `lanes`), `start_us`, `end_us` (relative), `name`, `cat`,
    `dur_us`, `lane`. `links`: `x_us`, `x2_us`, `row`, `row2` (launch call -> GPU work).
    `gaps`: `start_us`, `end_us`, `row` (idle GPU time to mark).
    """
    n = max(len(lanes), 1)
    safe = [_js_str(lane) for lane in lanes]
    mapping = "{" + ",".join(f"'{i}':{safe[i]}" for i in range(len(lanes))) + "}"
    y_axis = alt.Axis(
        values=list(range(n)), labelExpr=f"{mapping}[''+datum.value]", title=None, grid=False,
        labelLimit=220, labelOverlap=False,
    )
    y_scale = alt.Scale(domain=[-0.6, n - 0.4], reverse=True, nice=False, zero=False)
    base = spans.assign(y0=spans["row"] - 0.42, y1=spans["row"] + 0.42)
    layers: list[alt.Chart] = []
    if gaps is not None and len(gaps):
        g = gaps.assign(y0=gaps["row"] - 0.5, y1=gaps["row"] + 0.5)
        layers.append(
            alt.Chart(g)
            .mark_rect(color="#d62728", opacity=0.12)
            .encode(
                x="start_us:Q", x2="end_us:Q",
                y=alt.Y("y0:Q", scale=y_scale, axis=y_axis), y2="y1:Q",
                tooltip=[alt.Tooltip("start_us:Q", title="idle from (µs)", format=",.1f"),
                         alt.Tooltip("end_us:Q", title="to (µs)", format=",.1f"),
                         *([alt.Tooltip("bucket:N", title="host was")] if "bucket" in g else [])],
                **({"fill": alt.Fill("bucket:N", title="idle GPU: host was")}
                   if "bucket" in g else {}),
            )
        )
    layers.append(
        alt.Chart(base)
        .mark_rect(stroke="white", strokeWidth=0.3)
        .encode(
            x=alt.X("start_us:Q", title="time since first drawn event (µs)"),
            x2="end_us:Q",
            y=alt.Y("y0:Q", scale=y_scale, axis=y_axis),
            y2="y1:Q",
            color=alt.Color("cat:N", title="category",
                            scale=category_scale(spans["cat"].astype(str).tolist())),
            tooltip=[
                alt.Tooltip("name:N", title="name"),
                alt.Tooltip("cat:N", title="category"),
                alt.Tooltip("lane:N"),
                alt.Tooltip("start_us:Q", title="start (µs)", format=",.2f"),
                alt.Tooltip("dur_us:Q", title="duration (µs)", format=",.2f"),
            ],
        )
    )
    if links is not None and len(links):
        lk = links.assign(y0=links["row"] + 0.42, y1=links["row2"] - 0.42)
        layers.append(
            alt.Chart(lk)
            .mark_rule(color="#555", strokeDash=[2, 2], opacity=0.6)
            .encode(
                x="x_us:Q", x2="x2_us:Q",
                y=alt.Y("y0:Q", scale=y_scale, axis=y_axis), y2="y1:Q",
                tooltip=[alt.Tooltip("name:N", title="launch of")],
            )
        )
    height = timeline_height(n)
    return (
        alt.layer(*layers)
        .properties(title=title, height=height)
        .interactive(bind_y=False)
    )
