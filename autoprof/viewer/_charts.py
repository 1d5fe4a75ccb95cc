"""Altair chart builders: DataFrame (contract column names) in, chart out. No statistics.

Field names given to Vega-Lite are our own plain column names; user text (op names) only
ever appears as data values, which Vega draws as SVG text.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from autoprof.units import fmt_us

SELF = "Self"
TOTAL = "Total"
_LANE_COLORS = {"cpu": "#4c78a8", "gpu": "#f58518"}
# Kineto categories keep one color on every run; others take the spare colors in order.
CATEGORY_COLORS = {
    "cpu_op": "#4c78a8", "user_annotation": "#72b7b2", "python_function": "#9d755d",
    "cuda_runtime": "#e45756", "cuda_driver": "#ff9da6", "kernel": "#f58518",
    "gpu_memcpy": "#b279a2", "gpu_memset": "#eeca3b", "gpu_user_annotation": "#bab0ac",
}
REGION_CATEGORIES = ("user_annotation", "gpu_user_annotation")  # record_function regions
_SPARE_COLORS = ("#54a24b", "#88d27a", "#d67195", "#79706e", "#bcbddc", "#9ecae9")


_US_PER = {"µs": 1.0, "ms": 1e3, "s": 1e6}


def time_unit(max_us: float) -> tuple[str, float]:
    """The unit autoprof.units writes the largest value in ('ms', 1000.0: µs per unit);
    µs for anything below a millisecond."""
    unit = fmt_us(max_us).rsplit(" ", 1)[-1]
    return (unit, _US_PER[unit]) if unit in _US_PER else ("µs", 1.0)


def in_unit(df: pd.DataFrame, cols: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """`df` with the µs columns `cols` converted to one readable unit, and that unit."""
    values = pd.concat([pd.to_numeric(df[c], errors="coerce").abs() for c in cols])
    peak = float(values.max()) if len(values) and values.notna().any() else 0.0
    unit, per = time_unit(peak)
    return df.assign(**{c: pd.to_numeric(df[c], errors="coerce") / per for c in cols}), unit


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
    """Grouped horizontal bars: Self and total time per op, largest Self first (in µs, drawn
    in the unit that suits the largest).

    `ops` holds `name`, `calls`, `self_col`, `total_col`; the caller picks the rows.
    """
    top = ops.nlargest(top_n, self_col)[["name", "calls", self_col, total_col]].copy()
    top, unit = in_unit(top, [self_col, total_col])
    top["op"] = _short(top["name"])
    long = top.melt(
        id_vars=["op", "name", "calls"],
        value_vars=[self_col, total_col],
        var_name="measure",
        value_name="time_us",
    )
    long["measure"] = long["measure"].map({self_col: SELF, total_col: TOTAL})
    order = top.sort_values(self_col, ascending=False)["op"].tolist()
    chart: alt.Chart = (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("op:N", sort=order, title=None, axis=alt.Axis(labelLimit=320)),
            x=alt.X("time_us:Q", title=f"time ({unit})"),
            color=alt.Color(
                "measure:N",
                scale=alt.Scale(domain=[SELF, TOTAL], range=["#e45756", "#9ecae9"]),
                title=None,
            ),
            yOffset=alt.YOffset("measure:N", sort=[SELF, TOTAL]),
            tooltip=[
                alt.Tooltip("name:N", title="op"),
                alt.Tooltip("measure:N"),
                alt.Tooltip("time_us:Q", title=f"time ({unit})", format=",.3g"),
                alt.Tooltip("calls:Q", format=","),
            ],
        )
        .properties(title=title, height=alt.Step(9))
    )
    return chart


def balance(df: pd.DataFrame) -> alt.Chart:
    """One horizontal bar per side (`side`, `time_us`): where the profiled time went."""
    df, unit = in_unit(df, ["time_us"])
    chart: alt.Chart = (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=alt.Y("side:N", title=None, sort=["Self CPU", "Self GPU"]),
            x=alt.X("time_us:Q", title=f"time ({unit})"),
            color=alt.Color("side:N", legend=None,
                            scale=alt.Scale(domain=["Self CPU", "Self GPU"],
                                            range=[_LANE_COLORS["cpu"], _LANE_COLORS["gpu"]])),
            tooltip=["side:N", alt.Tooltip("time_us:Q", title=f"time ({unit})", format=",.3g")],
        )
        .properties(title="Self CPU vs self GPU time in the profiled steps",
                    height=alt.Step(30))
    )
    return chart


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
    time_us: bool = False,
) -> alt.Chart:
    """Vertical bars of `y` per `x` (x is ordinal), optionally colored by a column
    (`colors`: fixed color per value). `time_us`: y is a time in µs, drawn in a readable unit
    named in the axis title."""
    if time_us:
        df, unit = in_unit(df, [y])
        y_title = f"{y_title} ({unit})"
    enc: dict[str, object] = {
        "x": alt.X(f"{x}:O", title=x_title or x, axis=alt.Axis(labelAngle=0)),
        "y": alt.Y(f"{y}:Q", title=y_title),
        "tooltip": [alt.Tooltip(f"{x}:O")] + [alt.Tooltip(c) for c in (y, *tooltip)],
    }
    if color:
        scale = (alt.Scale(domain=list(colors), range=list(colors.values())) if colors
                 else alt.Undefined)
        enc["color"] = alt.Color(f"{color}:N", title=None, scale=scale)
    chart: alt.Chart = alt.Chart(df).mark_bar().encode(**enc).properties(title=title,
                                                                       height=260)
    return chart


def grouped_bars(
    df: pd.DataFrame, x: str, value_cols: Sequence[str], labels: Sequence[str], title: str,
    y_title: str, log: bool = False,
) -> alt.Chart:
    """Horizontal bars of several times (µs) side by side per `x` (e.g. CPU vs GPU per run),
    in a readable unit; `x` values label the rows, so long run labels stay whole. `log`: a
    logarithmic axis, so small runs stay visible beside big ones (zeros are left out)."""
    df, unit = in_unit(df, value_cols)
    long = df[[x, *value_cols]].melt(id_vars=[x], var_name="measure", value_name="value")
    if log:
        long = long[long["value"] > 0]
    scale = alt.Scale(type="log") if log else alt.Undefined
    long["measure"] = long["measure"].map(dict(zip(value_cols, labels, strict=True)))
    chart: alt.Chart = (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y(f"{x}:N", title=None, sort=None,
                    axis=alt.Axis(labelLimit=0, labelOverlap=False)),  # 0: never cut
            yOffset=alt.YOffset("measure:N"),
            x=alt.X("value:Q", title=f"{y_title} ({unit}{', log' if log else ''})",
                    scale=scale, stack=None),  # side by side; stacking breaks a log axis
            color=alt.Color("measure:N", title=None),
            tooltip=[alt.Tooltip(f"{x}:N"), "measure:N",
                     alt.Tooltip("value:Q", title=unit, format=",.3g")],
        )
        .properties(title=title, height=alt.Step(12))
    )
    return chart


def sweep(df: pd.DataFrame, size_col: str, value_cols: Sequence[str], labels: Sequence[str],
          title: str, y_title: str) -> alt.Chart:
    """Lines of several times (µs) against a problem size, both axes logarithmic."""
    df, unit = in_unit(df, value_cols)
    long = df[[size_col, *value_cols]].melt(
        id_vars=[size_col], var_name="measure", value_name="value"
    )
    long["measure"] = long["measure"].map(dict(zip(value_cols, labels, strict=True)))
    long = long[long["value"] > 0]
    chart: alt.Chart = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{size_col}:Q", scale=alt.Scale(type="log", base=2), title="size"),
            y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=f"{y_title} ({unit}, log)"),
            color=alt.Color("measure:N", title=None),
            tooltip=[alt.Tooltip(f"{size_col}:Q", title="size"), "measure:N",
                     alt.Tooltip("value:Q", format=",.2f")],
        )
        .properties(title=title, height=320)
    )
    return chart


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
    `gaps`: `start_us`, `end_us`, `row` (idle GPU time to mark). Times are drawn in the unit
    that suits the drawn span; annotations (`record_function` regions, ProfilerStep) carry
    their name on the bar, so forward, backward and optimizer regions tell apart at a glance.
    """
    unit, per = time_unit(float(spans["end_us"].max()) if len(spans) else 0.0)
    spans = spans.assign(start_us=spans["start_us"] / per, end_us=spans["end_us"] / per)
    if gaps is not None:
        gaps = gaps.assign(start_us=gaps["start_us"] / per, end_us=gaps["end_us"] / per)
    if links is not None:
        links = links.assign(x_us=links["x_us"] / per, x2_us=links["x2_us"] / per)
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
                tooltip=[alt.Tooltip("start_us:Q", title=f"idle from ({unit})", format=",.4g"),
                         alt.Tooltip("end_us:Q", title=f"to ({unit})", format=",.4g"),
                         *([alt.Tooltip("bucket:N", title="host was")] if "bucket" in g else [])],
                **({"fill": alt.Fill("bucket:N", title="idle GPU: host was")}
                   if "bucket" in g else {}),
            )
        )
    layers.append(
        alt.Chart(base)
        .mark_rect(stroke="white", strokeWidth=0.3)
        .encode(
            x=alt.X("start_us:Q", title=f"time since the first drawn event ({unit})"),
            x2="end_us:Q",
            y=alt.Y("y0:Q", scale=y_scale, axis=y_axis),
            y2="y1:Q",
            color=alt.Color("cat:N", title="category",
                            scale=category_scale(spans["cat"].astype(str).tolist())),
            tooltip=[
                alt.Tooltip("name:N", title="name"),
                alt.Tooltip("cat:N", title="category"),
                alt.Tooltip("lane:N"),
                alt.Tooltip("start_us:Q", title=f"start ({unit})", format=",.4g"),
                alt.Tooltip("dur_us:Q", title="duration (µs)", format=",.2f"),
            ],
        )
    )
    regions = base[base["cat"].isin(REGION_CATEGORIES)]
    if len(regions):
        layers.append(
            alt.Chart(regions[["start_us", "row", "name"]].assign(
                label=_short(regions["name"], 40)))
            .mark_text(align="left", baseline="middle", dx=3, fontSize=10, color="#222")
            .encode(x="start_us:Q", y=alt.Y("row:Q", scale=y_scale, axis=y_axis),
                    text="label:N", tooltip=[alt.Tooltip("name:N", title="region")])
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
