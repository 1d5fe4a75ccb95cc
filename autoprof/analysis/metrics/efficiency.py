"""How close the GPU work runs to the hardware: achieved TFLOP/s and GB/s against the device's
roof, per kernel (grouped by name), per launching op, and per step (MFU).

Each GPU work item carries the FLOPs and bytes its launching op gives it
(metrics/work_costs.py: shared among an op's kernels by duration; a copy's own byte count).
``bound`` is the roofline's side: ``compute`` when the arithmetic intensity (FLOPs / byte)
reaches the device's ridge point for the kernel's dtype, else ``memory``; copies between host
and device are ``host link``, between devices ``peer link`` (no share of the HBM peak). A
kernel's share of its roof (``pct_of_roofline``) is achieved TFLOP/s over min(peak,
intensity x bandwidth). A step's time is the longer of its CPU span and the span of its GPU
work (first start to last end), so MFU = the step's FLOPs / that time / the peak of the dtype
that did most FLOPs. The roofs themselves, as lines to draw: metrics/roofline.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.codes import pair_codes, unique_codes
from autoprof.analysis.metrics.flops import is_matrix_op
from autoprof.analysis.metrics.peaks import Peak, peak_for
from autoprof.analysis.metrics.stats import require_columns
from autoprof.analysis.metrics.work_costs import op_work, work_table

HALF_PEAK_PCT = 50.0  # "at >= 50% of peak": the share of GPU time reported
FAR_FROM_ROOF = 5  # kernels listed as farthest from the roofline
SUMMARY_ROWS = 50  # kernels and ops the summary lists (by GPU time)
_NEEDS = ["name", "cat", "is_gpu_work", "dur_us", "ts_us", "end_us", "op_row", "parent",
          "step", "rank", "flops", "input_dims"]

KERNEL_COLUMNS = ["name", "calls", "gpu_us", "flops", "tflops", "pct_of_peak_flops", "bytes",
                  "gbps", "pct_of_peak_bw", "intensity", "bound", "dtype", "pct_of_roofline",
                  "flops_source", "shared", "input_dims", "layout_pct"]
STEP_COLUMNS = ["rank", "step", "flops", "step_us", "tflops", "mfu_pct", "gpu_span_us",
                "gpu_span_tflops"]
_TIMES = ["dur_us", "flops_us", "bytes_us", "layout_us"]  # summed per kernel / op
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

    def far_from_roofline(self, n: int = FAR_FROM_ROOF, columns: list[str] | None = None
                          ) -> pd.DataFrame:
        """Kernels with the most GPU time lost to the roofline: gpu_us x (1 - efficiency);
        ``columns``: only these of the kernel table (with ``gpu_us`` and
        ``pct_of_roofline``), besides ``lost_us``."""
        k = self.kernels if columns is None else self.kernels[columns]
        k = k.dropna(subset=["pct_of_roofline"])
        lost = k["gpu_us"] * (1 - k["pct_of_roofline"].clip(upper=100) / 100)
        return k.assign(lost_us=lost).sort_values("lost_us", ascending=False).head(n)

    def to_dict(self, top: int = SUMMARY_ROWS) -> dict[str, Any]:
        """The summary's ``efficiency``: kernels and ops cut to the ``top`` with the most GPU
        time (``kernels_total`` / ``ops_total`` count them all)."""
        far = self.far_from_roofline(columns=["name", "gpu_us", "pct_of_roofline"])
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


_FIRST_SET = ("dtype", "flops_source", "input_dims")  # per kernel / op: the first non-empty


def _set_values(work: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per _FIRST_SET column of the work table: its values and the positions of the
    non-empty ones (the kernel and op tables read the same rows)."""
    out = {}
    for column in _FIRST_SET:
        values = work[column].to_numpy(dtype=object)
        out[column] = (values, np.flatnonzero(pd.notna(values) & (values != "")))
    return out


def _first_set(values: np.ndarray, filled: np.ndarray, codes: np.ndarray, order: np.ndarray
               ) -> np.ndarray:
    """Per group (``codes``; in the order of ``order``), the first non-empty value
    (``filled``: the positions of the non-empty ``values``)."""
    found, first, _ = unique_codes(codes[filled])
    out = np.full(len(order), "", dtype=object)
    if len(found):
        at = np.minimum(np.searchsorted(found, order), len(found) - 1)
        hit = found[at] == order
        out[hit] = values[filled[first[at[hit]]]]
    return out


def _grouped(work: pd.DataFrame, key: str, peak: Peak,
             set_values: dict[str, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """The kernel (or op) table: one row per distinct ``key`` (grouped by its codes,
    ``<key>_code``), by gpu_us, largest first. The sums are pandas' (one groupby); the
    counts, flags and rates are numpy over the groups."""
    if work.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in KERNEL_COLUMNS})
    codes = work[f"{key}_code"].to_numpy()  # one code per distinct text: no text hashed
    sums = _group_sums(work, _TIMES, codes, min_count=0)
    known_sums = _group_sums(work, ("flops", "bytes"), codes, min_count=1)  # NaN: none known
    distinct, first, inverse = unique_codes(codes)
    at = np.argsort(first, kind="stable")  # the groups in order of first appearance
    order = distinct[at]
    calls = np.bincount(inverse)
    counted = work["counted"].to_numpy(dtype=bool)
    links, link_text = pd.factorize(work["link"].to_numpy(dtype=object))
    pairs = np.unique(inverse * (len(link_text) + 1) + links)  # distinct (group, link)
    one_link = np.bincount(pairs // (len(link_text) + 1), minlength=len(distinct)) == 1
    link = np.where(one_link, np.asarray(link_text, dtype=object)[links[first]], "")[at]
    gpu_us, flops, nbytes = sums["dur_us"], known_sums["flops"], known_sums["bytes"]
    firsts = {c: _first_set(*set_values[c], codes, order) for c in _FIRST_SET}
    dtype = firsts["dtype"]
    is_counted = np.bincount(inverse, weights=counted.astype(float))[at] == calls[at]
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = _rates(flops, nbytes, sums, dtype, is_counted, link, peak)
    ranked = np.argsort(-gpu_us, kind="stable")  # largest first, ties in table order
    columns: dict[str, Any] = {
        "name": work[key].to_numpy(dtype=object)[first][at],
        "calls": calls[at],
        "gpu_us": gpu_us,
        "flops": flops,
        "bytes": nbytes,
        "dtype": dtype,
        "flops_source": firsts["flops_source"],
        "input_dims": firsts["input_dims"],
        "shared": np.bincount(inverse, weights=work["shared"].to_numpy(dtype=float))[at] > 0,
        **rates,
    }
    out = {c: columns[c][ranked] for c in KERNEL_COLUMNS}
    out["name"] = list(out["name"])
    out["bound"] = pd.Series(list(out["bound"]), dtype=object)
    return pd.DataFrame(out)


def _group_sums(work: pd.DataFrame, columns: Sequence[str], codes: np.ndarray,
                min_count: int) -> dict[str, np.ndarray]:
    """Per group (``codes``, in order of first appearance) the sum of each column: one
    pandas groupby over the columns as one float block (its compensated sums, as a
    groupby of the table's columns gives)."""
    block = np.column_stack([work[c].to_numpy(dtype=float) for c in columns])
    summed = pd.DataFrame(block).groupby(codes, sort=False).sum(min_count=min_count)
    values = summed.to_numpy(dtype=float)
    return {c: values[:, i] for i, c in enumerate(columns)}


def _positive(values: np.ndarray) -> np.ndarray:
    return np.where(values > 0, values, np.nan)


def _rates(flops: np.ndarray, nbytes: np.ndarray, sums: dict[str, np.ndarray],
           dtype: np.ndarray, counted: np.ndarray, link: np.ndarray, peak: Peak
           ) -> dict[str, np.ndarray]:
    """The kernel table's rates and roofline columns from its sums (``sums``: the summed
    times; ``dtype``, ``counted`` and ``link`` per kernel or op)."""
    gpu_us = sums["dur_us"]
    # rates over the calls whose cost is known (a kernel already running when the trace
    # began has no launch, hence no op and no cost)
    tflops = flops / (_positive(sums["flops_us"]) * 1e-6) / 1e12
    gbps = nbytes / (_positive(sums["bytes_us"]) * 1e-6) / 1e9
    intensity = flops / _positive(nbytes)
    roof = np.array([peak.for_dtype(d) or np.nan for d in dtype], dtype=float)
    bw = peak.gbps or np.nan
    over_link = link != ""
    pct_of_peak_bw = np.where(~over_link, 100 * gbps / bw, np.nan)
    ridge = roof * 1e12 / (bw * 1e9)
    bound = np.where(intensity >= ridge, "compute", "memory").astype(object)
    known = ~np.isnan(intensity) & np.isfinite(ridge)
    bound = np.where(counted, "memory", bound)  # copies, fills: bytes and no FLOPs
    bound = np.where(over_link, link, bound)
    known = known | counted
    attainable = np.minimum(roof, intensity * bw * 1e9 / 1e12)
    # copies and fills: bandwidth is their roof
    flopless = np.where(np.isnan(flops), 0.0, flops) <= 0
    return {
        "layout_pct": 100 * sums["layout_us"] / _positive(gpu_us),
        "tflops": tflops, "gbps": gbps, "intensity": intensity,
        "pct_of_peak_flops": 100 * tflops / roof,
        "pct_of_peak_bw": pct_of_peak_bw,
        "bound": np.array([b if k else None for b, k in zip(bound, known, strict=True)],
                          dtype=object),
        "pct_of_roofline": np.where(flopless, pct_of_peak_bw, 100 * tflops / attainable),
        "link": link, "counted": counted,
    }


def _steps(work: pd.DataFrame, steps: pd.DataFrame | None, peak: Peak, dtype: str | None
           ) -> pd.DataFrame:
    """Per step: FLOPs of its GPU work, its time (max of CPU span and GPU span), TFLOP/s and
    MFU over that time, and TFLOP/s over the GPU span alone (what CUDA events around the
    step's GPU work would measure). One row per (rank, step), in their order; the FLOPs
    summed by pandas (its compensated sum), the spans' ends by numpy (exact)."""
    in_step = np.flatnonzero(work["step"].to_numpy() >= 0)
    if not len(in_step):
        return pd.DataFrame({c: pd.Series(dtype=float) for c in STEP_COLUMNS})
    keys, group = pair_codes(work["rank"].to_numpy()[in_step], work["step"].to_numpy()[in_step])
    flops = pd.Series(work["flops"].to_numpy(dtype=float)[in_step]).groupby(group).sum(
        min_count=1).to_numpy(dtype=float)
    first, last = np.full(len(keys), np.nan), np.full(len(keys), np.nan)
    np.fmin.at(first, group, work["ts_us"].to_numpy(dtype=float)[in_step])
    np.fmax.at(last, group, work["end_us"].to_numpy(dtype=float)[in_step])
    gpu_span = last - first
    cpu_span = _cpu_spans(steps, keys)
    step_us = np.fmax(gpu_span, np.where(np.isnan(cpu_span), 0.0, cpu_span))
    with np.errstate(divide="ignore", invalid="ignore"):
        tflops = flops / (np.where(step_us > 0, step_us, np.nan) * 1e-6) / 1e12
        roof = peak.for_dtype(dtype) if dtype else None
        mfu = 100 * tflops / roof if roof else np.full(len(keys), np.nan)
        span_tflops = flops / (np.where(gpu_span > 0, gpu_span, np.nan) * 1e-6) / 1e12
    return pd.DataFrame({"rank": keys[:, 0], "step": keys[:, 1], "flops": flops,
                         "step_us": step_us, "tflops": tflops, "mfu_pct": mfu,
                         "gpu_span_us": gpu_span, "gpu_span_tflops": span_tflops})


def _cpu_spans(steps: pd.DataFrame | None, keys: np.ndarray) -> np.ndarray:
    """The per-step table's ``cpu_span_us`` of each (rank, step) in ``keys`` (NaN where it
    has none)."""
    out = np.full(len(keys), np.nan)
    if steps is None or steps.empty or "cpu_span_us" not in steps:
        return out
    found = dict(zip(zip(steps["rank"].tolist(), steps["step"].tolist(), strict=True),
                     steps["cpu_span_us"].to_numpy(dtype=float).tolist(), strict=True))
    if len(found) < len(steps):  # a (rank, step) twice: pandas' reindex says so
        spans = steps.set_index(["rank", "step"])["cpu_span_us"]
        return np.asarray(spans.reindex(pd.MultiIndex.from_arrays(keys.T)).to_numpy(float))
    return np.array([found.get(key, np.nan) for key in zip(*keys.T.tolist(), strict=True)],
                    dtype=float)


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
    work = work_table(events)
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
    set_values = _set_values(work)
    kernels = _grouped(work, "name", peak, set_values)
    ops = _grouped(op_work(work, events), "op", peak, set_values)
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
