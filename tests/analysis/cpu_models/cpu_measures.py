"""Each CPU finding's own measure, recomputed from the raw columns of the events table (name,
cat, ts_us, dur_us, tid, rank) and the manifest: no nesting, step or breakdown column of the
analysis is read, so a finding is held against numbers it did not compute itself.

| finding | measure | evidence key |
| --- | --- | --- |
| cpu-dispatch-bound | % of the steps in outermost ops under 20 us | short_ops_pct |
| threads | slowest / fastest called step | step_spread |
| threads | median GFLOP/s of mm, addmm, bmm, baddbmm (2MNK) | matrix_gflops (below) |
| cold-start (profiled) | first called step / median of the later ones | step_ratio |
| cold-start (untraced) | first warm-up call / median of the others | warmup_ratio |
| profiler-slowdown | median call region / median untraced call | slowdown |
| no-profiler-warmup | the schedule's warm-up steps (0 when it fires) | - |

Each value is held against the threshold its finding's evidence names beside it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

SHORT_OP_US = 20.0


def _text(events: pd.DataFrame, column: str) -> np.ndarray:
    return events[column].astype(str).to_numpy()


def called_steps(events: pd.DataFrame, call: str) -> list[tuple[float, float]]:
    """(start, end) of each ProfilerStep#N span holding the run's call region, in order."""
    names = _text(events, "name")
    steps = events[np.char.startswith(names.astype(str), "ProfilerStep#")]
    calls = events[names == call]
    out = []
    for ts, end in zip(steps["ts_us"], steps["ts_us"] + steps["dur_us"], strict=True):
        if ((calls["ts_us"] >= ts) & (calls["ts_us"] < end)).any():
            out.append((float(ts), float(end)))
    return sorted(out)


def step_ms(events: pd.DataFrame, call: str) -> list[float]:
    return [(end - ts) / 1e3 for ts, end in called_steps(events, call)]


def iteration_ms(events: pd.DataFrame, call: str) -> list[float]:
    """Each called step from its start to the end of its call region: the caller's loop and
    the call, less autoprof's own tail after the call (what a share of the step counts)."""
    calls = events[_text(events, "name") == call]
    out = []
    for ts, end in called_steps(events, call):
        inside = calls[(calls["ts_us"] >= ts) & (calls["ts_us"] < end)]
        out.append(float((inside["ts_us"] + inside["dur_us"]).max() - ts) / 1e3)
    return out


def call_ms(events: pd.DataFrame, call: str) -> list[float]:
    """Duration of the run's call region in each called step: the call alone, as the untraced
    calls time it."""
    calls = events[_text(events, "name") == call]
    out = []
    for ts, end in called_steps(events, call):
        inside = calls[(calls["ts_us"] >= ts) & (calls["ts_us"] < end)]
        out.append(float(inside["dur_us"].sum()) / 1e3)
    return out


def outermost_ops(events: pd.DataFrame) -> pd.DataFrame:
    """cpu_op rows (autoprof's own left out) that no other cpu_op row on the same thread
    encloses, found by a sweep over start times."""
    names = _text(events, "name")
    ops = events[(_text(events, "cat") == "cpu_op") & ~np.char.startswith(
        names.astype(str), "autoprof::")]
    keep = []
    for _, rows in ops.sort_values(["ts_us", "dur_us"], ascending=[True, False]).groupby(
            ["rank", "tid"], sort=False):
        end = -np.inf
        for index, ts, dur in zip(rows.index, rows["ts_us"], rows["dur_us"], strict=True):
            if ts >= end - 1e-3:
                keep.append(index)
                end = ts + dur
    return ops.loc[keep]


def heaviest_op(events: pd.DataFrame, call: str) -> tuple[str, float]:
    """The cpu_op with the most self time in the called steps, and its self time per step."""
    steps = called_steps(events, call)
    names = _text(events, "name")
    ops = events[(_text(events, "cat") == "cpu_op") & ~np.char.startswith(
        names.astype(str), "autoprof::")]
    inside = np.zeros(len(ops), bool)
    for ts, end in steps:
        inside |= ((ops["ts_us"] >= ts) & (ops["ts_us"] < end)).to_numpy()
    per = ops[inside].groupby(ops["name"].astype(str)[inside])["self_us"].sum()
    return str(per.idxmax()), float(per.max()) / len(steps)


def short_ops_pct(events: pd.DataFrame, call: str) -> float:
    steps = called_steps(events, call)
    ops = outermost_ops(events)
    inside = np.zeros(len(ops), bool)
    for ts, end in steps:
        inside |= ((ops["ts_us"] >= ts) & (ops["ts_us"] < end)).to_numpy()
    short = ops[inside & (ops["dur_us"] < SHORT_OP_US).to_numpy()]
    return 100.0 * float(short["dur_us"].sum()) / sum(end - ts for ts, end in steps)


MATRIX = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1),
          "aten::baddbmm": (1, 2)}  # positions of the two factors in Input Dims


def _product_flops(name: str, dims_text: str) -> float:
    first, second = MATRIX[name]
    dims = json.loads(dims_text)
    a, b = dims[first], dims[second]
    batch = a[0] if len(a) == 3 else 1
    return 2.0 * batch * a[-2] * a[-1] * b[-1]


def matrix_gflops(events: pd.DataFrame, call: str) -> float:
    """Median rate of the leaf matrix products of at least 1e5 FLOPs in the called steps."""
    rows = events[np.isin(_text(events, "name"), list(MATRIX))]
    rates = []
    for ts, end in called_steps(events, call):
        inside = rows[(rows["ts_us"] >= ts) & (rows["ts_us"] < end)]
        for name, dims, dur in zip(inside["name"].astype(str), inside["input_dims"].astype(str),
                                   inside["dur_us"], strict=True):
            flops = _product_flops(name, dims)
            if flops >= 1e5:
                rates.append(flops / dur / 1e3)
    return float(statistics.median(rates))


def step_spread(events: pd.DataFrame, call: str) -> float:
    ms = step_ms(events, call)
    return max(ms) / min(ms)


def first_step_ratio(events: pd.DataFrame, call: str) -> float:
    ms = step_ms(events, call)
    return ms[0] / statistics.median(ms[1:])


def warmup_ratio(manifest: dict[str, Any]) -> float:
    calls = manifest["warmup_call_ms"]
    return float(calls[0]) / statistics.median(calls[1:])


def slowdown(events: pd.DataFrame, manifest: dict[str, Any], call: str) -> float:
    """Median call region over the median untraced call (the first warm-up call left out when
    there are others: it carries one-time costs)."""
    warm = list(manifest.get("warmup_call_ms") or [])
    untraced = (warm[1:] if len(warm) > 1 else warm) + list(manifest.get("wait_call_ms") or [])
    return statistics.median(call_ms(events, call)) / statistics.median(untraced)


Measure = Callable[[pd.DataFrame, dict[str, Any], str, dict[str, Any]], list[tuple[float, float]]]


def _pairs(evidence: dict[str, Any], *keys: tuple[str, str, float]) -> list[tuple[float, float]]:
    """(recomputed value, threshold) for each (value key, threshold key, recomputed) whose
    value key the finding's evidence holds."""
    return [(value, float(evidence[threshold])) for key, threshold, value in keys
            if key in evidence and evidence.get(f"{key}_fired", True)]


def _dispatch(ev: pd.DataFrame, m: dict[str, Any], call: str,
              evidence: dict[str, Any]) -> list[tuple[float, float]]:
    return _pairs(evidence, ("short_ops_pct", "short_ops_pct_threshold", short_ops_pct(ev, call)))


def _threads(ev: pd.DataFrame, m: dict[str, Any], call: str,
             evidence: dict[str, Any]) -> list[tuple[float, float]]:
    pairs = _pairs(evidence, ("step_spread", "spread_threshold", step_spread(ev, call)))
    if evidence.get("matrix_gflops_fired"):  # a rate below its threshold: the pair reversed
        pairs.append((float(evidence["matrix_gflops_threshold"]), matrix_gflops(ev, call)))
    return pairs


def _cold(ev: pd.DataFrame, m: dict[str, Any], call: str,
          evidence: dict[str, Any]) -> list[tuple[float, float]]:
    keys = []
    if evidence.get("step_slow"):
        keys.append(("step_ratio", "ratio_threshold", first_step_ratio(ev, call)))
    if evidence.get("warmup_slow"):
        keys.append(("warmup_ratio", "ratio_threshold", warmup_ratio(m)))
    return _pairs(evidence, *keys)


def _slowdown(ev: pd.DataFrame, m: dict[str, Any], call: str,
              evidence: dict[str, Any]) -> list[tuple[float, float]]:
    return _pairs(evidence, ("slowdown", "ratio_threshold", slowdown(ev, m, call)))


def _no_warmup(ev: pd.DataFrame, m: dict[str, Any], call: str,
               evidence: dict[str, Any]) -> list[tuple[float, float]]:
    return [(0.0 if m["options"]["schedule"]["warmup"] == 0 else -1.0, 0.0)]


MEASURES: dict[str, Measure] = {
    "cpu-dispatch-bound": _dispatch, "threads": _threads, "cold-start": _cold,
    "profiler-slowdown": _slowdown, "no-profiler-warmup": _no_warmup,
}
