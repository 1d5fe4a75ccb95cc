"""How close the GPU work runs to the hardware: achieved TFLOP/s and GB/s against the device's
roof, per kernel (grouped by name), per launching op, and per step (MFU).

Each GPU work item takes the FLOPs and bytes of the op that launched it (the innermost
``cpu_op`` around the launch call, else the nearest enclosing op with a formula; see
metrics/flops.py). An op that launched several kernels shares its FLOPs and bytes among them
by duration, so they all show the op's rate:

| kernel | op | dur_us | flops | tflops |
| --- | --- | --- | --- | --- |
| nchwToNhwc | aten::cudnn_convolution | 10 | 1e9 | 100 |
| fprop_implicit_gemm | aten::cudnn_convolution | 90 | 9e9 | 100 |

``bound`` is the roofline's side: ``compute`` when the arithmetic intensity (FLOPs / byte)
reaches the device's ridge point for the kernel's dtype, else ``memory``. A kernel's share
of its roof (``pct_of_roofline``) is achieved TFLOP/s over min(peak, intensity x bandwidth).
A step's time is the longer of its CPU span and the span of its GPU work (first start to last
end), so MFU = the step's FLOPs / that time / the peak of the dtype that did most FLOPs.

A memcpy or memset that carries its own byte count (Kineto's ``args.bytes``, the ``bytes``
column) takes those bytes instead of a share of its op's; a device-to-device copy reads and
writes each of them, so it moves twice its count (as a ``copy_`` op's shapes say). Copies
between host and device
(HtoD, DtoH: over PCIe or the host link) are bounded by that link, not by HBM: their
``bound`` is ``host link`` and they get no share of the HBM peak; so are copies between
devices (PtoP: NVLink or PCIe), ``peer link``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.flops import has_rule, is_matrix_op, op_costs
from autoprof.analysis.metrics.peaks import Peak, peak_for
from autoprof.analysis.metrics.stats import factorized, require_columns

HALF_PEAK_PCT = 50.0  # "at >= 50% of peak": the share of GPU time reported
FAR_FROM_ROOF = 5  # kernels listed as farthest from the roofline
SUMMARY_ROWS = 50  # kernels and ops the summary lists (by GPU time)
_TF32_KERNEL = re.compile(r"tf32|xf32", re.IGNORECASE)
_LAYOUT_KERNEL = re.compile(r"nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw", re.IGNORECASE)
_DEVICE_COPY = re.compile(r"\bDtoD\b", re.IGNORECASE)
_HOST_COPY = re.compile(r"\b(HtoD|DtoH|HtoH)\b|Pageable|Pinned", re.IGNORECASE)
_PEER_COPY = re.compile(r"\bPtoP\b", re.IGNORECASE)
HOST_LINK = "host link"  # ``bound`` of a copy between host and device memory
PEER_LINK = "peer link"  # ``bound`` of a copy between two devices
_COST_COLUMNS = ["name", "input_dims", "input_types", "input_values", "flops"]  # op_costs reads
_WORK_COLUMNS = ["name", "cat", "dur_us", "ts_us", "end_us", "step", "rank", "op_row", "bytes"]
_NEEDS = ["name", "cat", "is_gpu_work", "dur_us", "ts_us", "end_us", "op_row", "parent",
          "step", "rank", "flops", "input_dims"]

KERNEL_COLUMNS = ["name", "calls", "gpu_us", "flops", "tflops", "pct_of_peak_flops", "bytes",
                  "gbps", "pct_of_peak_bw", "intensity", "bound", "dtype", "pct_of_roofline",
                  "flops_source", "shared", "input_dims", "layout_pct"]
STEP_COLUMNS = ["rank", "step", "flops", "step_us", "tflops", "mfu_pct", "gpu_span_us",
                "gpu_span_tflops"]
NO_SHAPES = ("the trace has no input shapes, so no FLOPs or bytes: profile with "
             "record_shapes=True (e.g. @autoprof(record_shapes=True, with_flops=True))")


@dataclass
class Efficiency:
    """The roofline view of one run (``Analysis.efficiency``)."""

    device: str | None
    peak: Peak
    kernels: pd.DataFrame  # KERNEL_COLUMNS, by gpu_us, largest first
    ops: pd.DataFrame  # same columns, grouped by the launching op's name
    steps: pd.DataFrame  # STEP_COLUMNS
    step_tflops: float | None = None  # median over steps
    mfu_pct: float | None = None
    dtype: str | None = None  # the dtype that did most FLOPs (MFU's roof)
    at_half_peak_pct: float | None = None  # share of GPU time at >= 50% of the roofline
    gpu_us: float = 0.0
    notes: list[str] = field(default_factory=list)

    def far_from_roofline(self, n: int = FAR_FROM_ROOF) -> pd.DataFrame:
        """Kernels with the most GPU time lost to the roofline: gpu_us x (1 - efficiency)."""
        k = self.kernels.dropna(subset=["pct_of_roofline"])
        lost = k["gpu_us"] * (1 - k["pct_of_roofline"].clip(upper=100) / 100)
        return k.assign(lost_us=lost).sort_values("lost_us", ascending=False).head(n)

    def to_dict(self, top: int = SUMMARY_ROWS) -> dict[str, Any]:
        """The summary's ``efficiency``: kernels and ops cut to the ``top`` with the most GPU
        time (``kernels_total`` / ``ops_total`` count them all)."""
        far = self.far_from_roofline()
        return {
            "device": self.device,
            "peak": self.peak.to_dict(),
            "dtype": self.dtype,
            "step_tflops": self.step_tflops,
            "mfu_pct": self.mfu_pct,
            "at_half_peak_pct": self.at_half_peak_pct,
            "notes": list(self.notes),
            "kernels": self.kernels.head(top).to_dict(orient="records"),
            "kernels_total": len(self.kernels),
            "ops": self.ops.head(top).to_dict(orient="records"),
            "ops_total": len(self.ops),
            "steps": self.steps.to_dict(orient="records"),
            "far_from_roofline": far[["name", "gpu_us", "pct_of_roofline", "lost_us"]]
            .to_dict(orient="records"),
        }


def _cost_rows(events: pd.DataFrame, op_row: np.ndarray) -> np.ndarray:
    """For each launching op row, the row whose cost counts: the op itself when flops.py has
    a formula for it, else its nearest enclosing cpu_op that has one (-1 if none). Every
    row climbs its parents at once, one level per pass (as many passes as ops nest)."""
    name_code, names = factorized(events["name"])
    cat_code, cats = factorized(events["cat"])
    ruled = np.array([has_rule(str(n)) for n in names], dtype=bool)[name_code]
    is_op = (cats == "cpu_op")[cat_code]
    parent = events["parent"].to_numpy(dtype=np.int64)
    row = np.asarray(op_row, dtype=np.int64).copy()
    climbing = np.flatnonzero(row >= 0)
    while len(climbing):
        at = row[climbing]
        climbing = climbing[is_op[at] & ~ruled[at]]
        row[climbing] = parent[row[climbing]]
        climbing = climbing[row[climbing] >= 0]
    found = row >= 0
    found[found] = is_op[row[found]]
    return np.where(found, row, -1)


def _distinct_costs(ops: pd.DataFrame) -> pd.DataFrame:
    """``op_costs(ops)``, computed on one row per distinct value of the columns it reads
    (name, input dims, types, values, flops: by their codes, no text built per row) and
    spread back; same index as ``ops``."""
    keys = [factorized(ops[c])[0] for c in ("name", "input_dims", "input_types",
                                            "input_values") if c in ops]
    keys.append(pd.factorize(ops["flops"].to_numpy(dtype=float), use_na_sentinel=False)[0])
    combined = np.zeros(len(ops), dtype=np.int64)
    for key in keys:  # one code per distinct tuple of keys, kept under len(ops)
        combined = pd.factorize(combined * (int(key.max()) + 1) + key)[0]
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    costs = op_costs(ops.iloc[first]).iloc[inverse.reshape(-1)]
    return costs.set_axis(ops.index)


def _name_flags(names: pd.Series, pattern: re.Pattern[str]) -> np.ndarray:
    """``pattern.search`` over a text column, once per distinct value."""
    codes, uniques = factorized(names)
    return np.asarray(np.array([bool(pattern.search(str(u))) for u in uniques], dtype=bool)[codes])


def _text_at(column: pd.Series, rows: np.ndarray) -> np.ndarray:
    """The text of ``column`` at positions ``rows`` ("" for NA), from its codes."""
    codes, uniques = factorized(column)
    text = np.array(["" if pd.isna(u) else str(u) for u in uniques], dtype=object)
    return np.asarray(text[codes[rows]])


def _objects(values: np.ndarray) -> pd.Series:
    """An object column (not pandas' Arrow-backed ``str``, which copies every value)."""
    return pd.Series(values, dtype=object)


def _work_table(events: pd.DataFrame) -> pd.DataFrame:
    """One row per GPU work item: its op, share of the op's FLOPs and bytes, dtype."""
    is_work = events["is_gpu_work"].to_numpy(dtype=bool)
    work = events.loc[is_work, [c for c in _WORK_COLUMNS if c in events]]
    name_codes = factorized(events["name"])[0]  # the kernel and op tables group these
    cost_row = _cost_rows(events, work["op_row"].to_numpy())
    has_op = cost_row >= 0
    op_rows = np.unique(cost_row[has_op])
    ops = events[[c for c in _COST_COLUMNS if c in events]].iloc[op_rows]
    costs = _distinct_costs(ops) if len(ops) else op_costs(events.iloc[:0])
    n = len(work)
    # text as object columns: pandas would otherwise copy every value into Arrow strings
    text = {c: np.full(n, "", dtype=object) for c in ("op", "dtype", "flops_source",
                                                       "input_dims")}
    op_flops, op_bytes = np.full(n, np.nan), np.full(n, np.nan)
    op_code = np.full(n, -1, dtype=np.intp)  # -1: no op
    if has_op.any():
        rows = cost_row[has_op]
        op_code[has_op] = name_codes[rows]
        picked = costs.iloc[np.searchsorted(op_rows, rows)]
        text["op"][has_op] = _text_at(events["name"], rows)
        op_flops[has_op] = picked["flops"].to_numpy(dtype=float)
        op_bytes[has_op] = picked["bytes"].to_numpy(dtype=float)
        text["dtype"][has_op] = picked["dtype"].to_numpy(dtype=object)
        text["flops_source"][has_op] = picked["flops_source"].to_numpy(dtype=object)
        text["input_dims"][has_op] = _text_at(events["input_dims"], rows)
    table = pd.DataFrame({
        "name": _objects(_text_at(work["name"], np.arange(n))),
        "name_code": name_codes[is_work],
        "is_kernel": _name_flags(work["cat"], re.compile(r"^kernel$", re.IGNORECASE)),
        "dur_us": work["dur_us"].to_numpy(dtype=float),
        "ts_us": work["ts_us"].to_numpy(dtype=float),
        "end_us": work["end_us"].to_numpy(dtype=float),
        "step": work["step"].to_numpy(),
        "rank": work["rank"].to_numpy(),
        "cost_row": cost_row,
        "op": _objects(text["op"]),
        "op_code": op_code,
        "op_flops": op_flops,
        "op_bytes": op_bytes,
        "dtype": _objects(text["dtype"]),
        "flops_source": _objects(text["flops_source"]),
        "input_dims": _objects(text["input_dims"]),
    })
    tf32 = (table["dtype"] == "fp32").to_numpy() & _name_flags(work["name"], _TF32_KERNEL)
    table.loc[tf32, "dtype"] = "tf32"
    # an op's kernels share its cost by duration; its memsets / memcpys get a share only
    # when the op itself only moves memory (copy_, fill_: no FLOPs) and they do not carry
    # their own byte count
    own = (work["bytes"].to_numpy(dtype=float) if "bytes" in work
           else np.full(len(work), np.nan))
    counted = ~table["is_kernel"].to_numpy() & np.isfinite(own) & (own >= 0)
    table["link"] = _objects(np.where(counted & _name_flags(work["name"], _HOST_COPY),
                                      HOST_LINK,
                                      np.where(counted & _name_flags(work["name"], _PEER_COPY),
                                               PEER_LINK, "")).astype(object))
    memory_op = table["op_flops"].fillna(-1).to_numpy() == 0
    takes = (table["is_kernel"].to_numpy() | memory_op) & ~counted
    table.loc[~takes, ["op_flops", "op_bytes", "flops_source", "dtype"]] = [np.nan, np.nan, "",
                                                                           ""]
    sharing = table["cost_row"].where(takes, -1)
    dur = table["dur_us"].where(takes, 0.0)
    op_dur = dur.groupby(sharing).transform("sum").to_numpy()
    op_kernels = dur.groupby(sharing).transform("size").to_numpy()
    share = np.where(op_dur > 0, dur / np.where(op_dur > 0, op_dur, 1), 0.0)
    table["flops"] = table["op_flops"] * share
    moved = own * np.where(_name_flags(work["name"], _DEVICE_COPY), 2.0, 1.0)
    table["bytes"] = np.where(counted, moved, table["op_bytes"] * share)
    table["counted"] = counted
    costed = table["op_flops"].notna().to_numpy() | table["op_bytes"].notna().to_numpy()
    table["shared"] = costed & (op_kernels > 1)
    layout = _name_flags(work["name"], _LAYOUT_KERNEL)
    table["layout_us"] = table["dur_us"].where(layout, 0.0)
    table["flops_us"] = table["dur_us"].where(table["flops"].notna(), 0.0)
    table["bytes_us"] = table["dur_us"].where(table["bytes"].notna(), 0.0)
    return table


def _op_work(work: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The work table as the op table counts it: a memcpy / memset's own bytes count for its
    op only when the op launched no kernel (a copy), not beside a matmul's whose bytes are
    the shapes' (or unknown)."""
    op_row = events.loc[events["is_gpu_work"].to_numpy(dtype=bool), "op_row"].to_numpy()
    with_kernel = set(op_row[work["is_kernel"].to_numpy() & (op_row >= 0)].tolist())
    beside = work["counted"].to_numpy() & np.isin(op_row, list(with_kernel))
    out = work.assign(op=work["op"].replace("", "(no op)"))
    out.loc[beside, ["bytes", "bytes_us"]] = [np.nan, 0.0]
    out.loc[beside, "counted"] = False
    out.loc[beside, "link"] = ""
    return out


def _first_set(work: pd.DataFrame, codes: np.ndarray, column: str, order: np.ndarray
               ) -> np.ndarray:
    """Per group (``codes``; in the order of ``order``), the first non-empty ``column``."""
    values = work[column].to_numpy(dtype=object)
    filled = np.flatnonzero(pd.notna(values) & (values != ""))
    found, first = np.unique(codes[filled], return_index=True)
    out = np.full(len(order), "", dtype=object)
    if len(found):
        at = np.minimum(np.searchsorted(found, order), len(found) - 1)
        hit = found[at] == order
        out[hit] = values[filled[first[at[hit]]]]
    return out


def _grouped(work: pd.DataFrame, key: str, peak: Peak) -> pd.DataFrame:
    """The kernel (or op) table: one row per distinct ``key`` (grouped by its codes,
    ``<key>_code``), by gpu_us, largest first."""
    if work.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in KERNEL_COLUMNS})
    codes = work[f"{key}_code"].to_numpy()  # one code per distinct text: no text hashed
    g = work.groupby(codes, sort=False)
    sums = g[["dur_us", "flops_us", "bytes_us", "layout_us"]].sum()
    order = sums.index.to_numpy()
    distinct, first = np.unique(codes, return_index=True)
    text = work[key].to_numpy(dtype=object)[first]
    out = pd.DataFrame({
        "name": list(text[np.searchsorted(distinct, order)]),
        "calls": g.size().reindex(order).to_numpy(),
        "gpu_us": sums["dur_us"].to_numpy(),
        "flops": g["flops"].sum(min_count=1).reindex(order).to_numpy(),
        "bytes": g["bytes"].sum(min_count=1).reindex(order).to_numpy(),
        **{c: _first_set(work, codes, c, order) for c in ("dtype", "flops_source",
                                                          "input_dims")},
        "shared": g["shared"].any().reindex(order).to_numpy(),
        "counted": g["counted"].all().reindex(order).to_numpy(dtype=bool),
        "link": g["link"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else "")
        .reindex(order).to_numpy(dtype=object),
        "flops_us": sums["flops_us"].to_numpy(),
        "bytes_us": sums["bytes_us"].to_numpy(),
        "layout_us": sums["layout_us"].to_numpy(),
    })
    out["layout_pct"] = 100 * out["layout_us"] / out["gpu_us"].where(out["gpu_us"] > 0)
    # rates over the calls whose cost is known (a kernel already running when the trace
    # began has no launch, hence no op and no cost)
    out["tflops"] = out["flops"] / (out["flops_us"].where(out["flops_us"] > 0) * 1e-6) / 1e12
    out["gbps"] = out["bytes"] / (out["bytes_us"].where(out["bytes_us"] > 0) * 1e-6) / 1e9
    out["intensity"] = out["flops"] / out["bytes"].where(out["bytes"] > 0)
    roof = np.array([peak.for_dtype(d) or np.nan for d in out["dtype"]], dtype=float)
    bw = peak.gbps or np.nan
    out["pct_of_peak_flops"] = 100 * out["tflops"] / roof
    over_link = out["link"].to_numpy(dtype=object) != ""
    out["pct_of_peak_bw"] = (100 * out["gbps"] / bw).where(~over_link)
    ridge = roof * 1e12 / (bw * 1e9)
    bound = np.where(out["intensity"] >= ridge, "compute", "memory")
    known = out["intensity"].notna() & np.isfinite(ridge)
    bound = np.where(out["counted"], "memory", bound)  # copies, fills: bytes and no FLOPs
    bound = np.where(over_link, out["link"].to_numpy(dtype=object), bound)
    known = known | out["counted"]
    out["bound"] = pd.Series([b if k else None for b, k in zip(bound, known, strict=True)],
                             dtype=object, index=out.index)
    attainable = np.minimum(roof, out["intensity"] * bw * 1e9 / 1e12)
    by_flops = 100 * out["tflops"] / attainable
    flopless = out["flops"].fillna(0) <= 0  # copies and fills: bandwidth is their roof
    out["pct_of_roofline"] = np.where(flopless, out["pct_of_peak_bw"], by_flops)
    out = out.sort_values("gpu_us", ascending=False, kind="stable").reset_index(drop=True)
    return out[KERNEL_COLUMNS]


def _steps(work: pd.DataFrame, steps: pd.DataFrame | None, peak: Peak, dtype: str | None
           ) -> pd.DataFrame:
    """Per step: FLOPs of its GPU work, its time (max of CPU span and GPU span), TFLOP/s and
    MFU over that time, and TFLOP/s over the GPU span alone (what CUDA events around the
    step's GPU work would measure)."""
    in_step = work[work["step"] >= 0]
    if in_step.empty:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in STEP_COLUMNS})
    g = in_step.groupby(["rank", "step"], sort=True)
    out = pd.DataFrame({
        "flops": g["flops"].sum(min_count=1),
        "gpu_span_us": g["end_us"].max() - g["ts_us"].min(),
    }).reset_index()
    cpu_span = pd.Series(0.0, index=out.index)
    if steps is not None and not steps.empty and "cpu_span_us" in steps:
        spans = steps.set_index(["rank", "step"])["cpu_span_us"]
        keys = pd.MultiIndex.from_frame(out[["rank", "step"]])
        cpu_span = pd.Series(spans.reindex(keys).to_numpy(dtype=float), index=out.index)
    out["step_us"] = np.fmax(out["gpu_span_us"].to_numpy(), cpu_span.fillna(0).to_numpy())
    out["tflops"] = out["flops"] / (out["step_us"].where(out["step_us"] > 0) * 1e-6) / 1e12
    roof = peak.for_dtype(dtype) if dtype else None
    out["mfu_pct"] = 100 * out["tflops"] / roof if roof else np.nan
    span = out["gpu_span_us"].where(out["gpu_span_us"] > 0) * 1e-6
    out["gpu_span_tflops"] = out["flops"] / span / 1e12
    return out[STEP_COLUMNS]


def _finite(value: float) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def efficiency(events: pd.DataFrame, device: str | None = None, *,
               steps: pd.DataFrame | None = None, peak_tflops: float | None = None,
               peak_gbps: float | None = None) -> Efficiency:
    """The roofline view of ``events`` on ``device`` (see the module doc).

    ``steps`` is metrics.steps.per_step's table (for the CPU span of each step); a given
    ``peak_tflops`` / ``peak_gbps`` (else AUTOPROF_PEAK_TFLOPS / AUTOPROF_PEAK_GBPS) replaces
    the device table's figures.
    """
    require_columns(events, _NEEDS, "efficiency")
    peak = peak_for(device, peak_tflops, peak_gbps)
    work = _work_table(events)
    notes: list[str] = []
    if work.empty:
        notes.append("no GPU work in this trace")
    has_shapes = "input_dims" in events and bool(events["input_dims"].ne("").to_numpy(
        dtype=bool, na_value=False).any())
    if not work.empty and not has_shapes and work["flops_source"].eq("").all():
        notes.append(NO_SHAPES)
    if not peak.tflops and not peak.gbps:
        notes.append(f"no peak figures for device {device!r}: shares of peak are null; set "
                     "AUTOPROF_PEAK_TFLOPS / AUTOPROF_PEAK_GBPS to supply them")
    if not work.empty and bool(work["link"].ne("").any()):
        notes.append("copies between host and device (HtoD, DtoH) or between devices (PtoP) "
                     "are bounded by the host link (PCIe) or the peer link, not HBM: their "
                     "GB/s are not compared with the HBM peak")
    if bool(work["shared"].any()) if not work.empty else False:
        notes.append("ops that launched several kernels share their FLOPs and bytes among "
                      "them by duration")
    with_flops = work[work["flops"].fillna(0) > 0]
    dtype = None
    if not with_flops.empty:
        by_dtype = with_flops.groupby("dtype")["flops"].sum()
        dtype = str(by_dtype.idxmax()) or None
    kernels = _grouped(work, "name", peak)
    ops = _grouped(_op_work(work, events), "op", peak)
    per_step = _steps(work, steps, peak, dtype)
    total_us = float(work["dur_us"].sum())
    good = kernels["pct_of_roofline"].astype(float) >= HALF_PEAK_PCT
    known_us = float(kernels.loc[kernels["pct_of_roofline"].notna(), "gpu_us"].sum())
    at_half = 100 * float(kernels.loc[good, "gpu_us"].sum()) / known_us if known_us else None
    step_tflops = _finite(float(per_step["tflops"].median())) if len(per_step) else None
    mfu = _finite(float(per_step["mfu_pct"].median())) if len(per_step) else None
    return Efficiency(device=device, peak=peak, kernels=kernels, ops=ops, steps=per_step,
                      step_tflops=step_tflops, mfu_pct=mfu, dtype=dtype,
                      at_half_peak_pct=at_half, gpu_us=total_us, notes=notes)


def matrix_kernels(eff: Efficiency) -> pd.DataFrame:
    """Rows of the op table for matrix products, convolutions and attention."""
    return eff.ops[[is_matrix_op(str(n)) for n in eff.ops["name"]]]


def roof_line(peak: Peak, dtype: str, lo: float, hi: float, points: int = 64) -> pd.DataFrame:
    """The roofline of ``dtype`` from ``lo`` to ``hi`` FLOPs/byte (log-spaced, with the ridge
    point itself): ``intensity``, ``tflops`` = min(peak, intensity x bandwidth), ``roof``
    (the dtype). Empty when the device has no figures for ``dtype``."""
    top, ridge = peak.for_dtype(dtype), peak.ridge(dtype)
    if top is None or ridge is None or not (0 < lo < hi):
        return pd.DataFrame({"intensity": [], "tflops": [], "roof": []})
    xs = np.unique(np.append(np.geomspace(lo, hi, points), ridge if lo < ridge < hi else lo))
    bw = float(peak.gbps or 0)
    return pd.DataFrame({"intensity": xs, "tflops": np.minimum(top, xs * bw / 1e3),
                         "roof": dtype})


def roof_lines(eff: Efficiency, points: int = 64) -> pd.DataFrame:
    """The roofs of every dtype the kernels ran in, over their intensities with a margin of
    4x either side and the ridge points; what the Roofline page draws."""
    k = eff.kernels
    x = k["intensity"].astype(float)
    x = x[np.isfinite(x) & (x > 0)]
    dtypes = [d for d in dict.fromkeys(k["dtype"].astype(str)) if eff.peak.for_dtype(d)]
    if x.empty or not dtypes:
        return pd.DataFrame({"intensity": [], "tflops": [], "roof": []})
    ridges = [r for r in (eff.peak.ridge(d) for d in dtypes) if r]
    lo, hi = min([float(x.min()), *ridges]) / 4, max([float(x.max()), *ridges]) * 4
    return pd.concat([roof_line(eff.peak, d, lo, hi, points) for d in dtypes],
                     ignore_index=True)
