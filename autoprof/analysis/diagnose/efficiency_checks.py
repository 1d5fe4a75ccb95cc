"""The low-efficiency finding: matrix ops with the most GPU time far under their roofline,
with why (fp32 where tf32 is faster, sizes tensor cores cannot align, calls too small to fill
the GPU, layout transposes). The numbers come from metrics/efficiency.py."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from autoprof.analysis.diagnose.records import Diagnostic
from autoprof.analysis.metrics.efficiency import Efficiency, matrix_kernels
from autoprof.analysis.metrics.peaks import Peak
from autoprof.analysis.metrics.stats import finite_or_none

LOW_EFFICIENCY_PCT = 50.0  # a matrix op under this share of its roofline is far from it
BIG_OP_SHARE = 0.10  # ... and it matters when it holds this share of the GPU time
SMALL_GEMM_FLOPS = 1e9  # FLOPs per call under which a matrix op is too small to fill a GPU
_TENSOR_CORE_GAIN = 2.0  # fp32 is worth flagging when tf32 is at least this much faster
LAYOUT_PCT = 10.0  # share of a convolution's GPU time in layout transposes worth naming
_ALIGN = {"bf16": 8, "fp16": 8, "tf32": 4, "fp32": 4, "fp8": 16}


def _dims(text: str) -> list[list[int]]:
    try:
        dims = json.loads(text) if text else []
    except ValueError:
        return []
    return [d for d in dims if isinstance(d, list) and d and all(isinstance(x, int) for x in d)]


def _aligned_sizes(op: str, dims: list[list[int]]) -> list[int]:
    """The sizes tensor cores want aligned: a matrix product's M/K/N, a convolution's input
    and output channels, attention's head dimension."""
    base = op.split("::", 1)[-1]
    if "conv" in base and len(dims) >= 2 and len(dims[0]) >= 2:
        return [dims[0][1], dims[1][0]]
    if "attention" in base:
        return [dims[0][-1]] if dims else []
    if len(dims) >= 2 and len(dims[0]) >= 2 and dims[1]:
        if base in ("addmm", "baddbmm") and len(dims) >= 3:
            dims = dims[1:]
        return [dims[0][-2], dims[0][-1], dims[1][-1]]
    return []


def _why_slow(row: pd.Series, peak: Peak) -> list[str]:
    """Why a matrix op runs far under its roof, as short phrases ([] when it does not)."""
    reasons = []
    tf32, fp32 = peak.for_dtype("tf32"), peak.for_dtype("fp32")
    if row["dtype"] == "fp32" and tf32 and fp32 and tf32 >= _TENSOR_CORE_GAIN * fp32:
        reasons.append(f"fp32 on CUDA cores (roof {fp32:g} TFLOP/s; TF32 tensor cores "
                       f"{tf32:g}, bf16 {peak.for_dtype('bf16') or 0:g})")
    pct = row["pct_of_roofline"]
    if not (pct < LOW_EFFICIENCY_PCT):  # also NaN: no roof to compare with
        return reasons
    if row["layout_pct"] >= LAYOUT_PCT:
        reasons.append(f"{row['layout_pct']:.0f}% of its GPU time in NCHW/NHWC layout "
                       "transposes")
    align = _ALIGN.get(str(row["dtype"]))
    sizes = _aligned_sizes(str(row["name"]), _dims(str(row["input_dims"])))
    if align and any(d % align for d in sizes):
        reasons.append(f"sizes {sizes} not all multiples of {align}")
    if row["calls"] and row["flops"] / row["calls"] < SMALL_GEMM_FLOPS:
        reasons.append(f"small problem ({row['flops'] / row['calls'] / 1e6:.3g} MFLOP a call)")
    return reasons or ["no cause visible in the shapes"]


def low_efficiency(eff: Efficiency,
                   compiled: bool = False) -> tuple[list[dict[str, Any]], str] | None:
    """The matrix ops with the most GPU time that sit far under the roofline (or run fp32
    where tensor cores would be several times faster), and a hint; None when there are none.
    """
    if not eff.gpu_us:
        return None
    big = matrix_kernels(eff)
    big = big[(big["gpu_us"] >= BIG_OP_SHARE * eff.gpu_us) & big["flops"].notna()]
    found = []
    for _, row in big.iterrows():
        reasons = _why_slow(row, eff.peak)
        if reasons:
            found.append({"op": row["name"], "gpu_us": float(row["gpu_us"]),
                          "tflops": finite_or_none(row["tflops"]), "dtype": row["dtype"],
                          "pct_of_roofline": finite_or_none(row["pct_of_roofline"]),
                          "reasons": reasons})
    if not found:
        return None
    hints = []
    text = " ".join(" ".join(f["reasons"]) for f in found)
    if "fp32" in text:
        hints.append("let fp32 matmuls use tensor cores: torch.set_float32_matmul_precision("
                     "'high') (TF32), or run the model under torch.autocast('cuda', "
                     "dtype=torch.bfloat16)")
    if "layout" in text:
        hints.append("keep convolutions in channels_last: model.to(memory_format="
                     "torch.channels_last) and the same for the inputs")
    if "multiples" in text:
        hints.append("pad hidden sizes, vocabularies and batch to multiples of 8 (16 for fp8)")
    if "small problem" in text:
        hints.append("give each matmul more work: a larger batch, or fuse small ones"
                     + ("" if compiled else " (torch.compile)"))
    if not hints:
        hints.append("compare kernels with torch.backends.cudnn.benchmark=True or "
                     "torch.compile(mode='max-autotune')")
    return found, "; ".join(hints) + "."


def low_efficiency_diagnostic(eff: Efficiency, verdict: str,
                              compiled: bool = False) -> Diagnostic | None:
    """The ``low-efficiency`` finding: on a run that is not overhead- or input-bound (where
    the host, not the kernels, decides the time), the matrix ops with the most GPU time sit
    far under the roofline (see ``low_efficiency``)."""
    if verdict in ("overhead-bound", "cpu-only", "input-bound"):
        return None
    found = low_efficiency(eff, compiled)
    if found is None:
        return None
    ops, hint = found
    worst = ops[0]
    pct = worst["pct_of_roofline"]
    share = 100 * sum(o["gpu_us"] for o in ops) / eff.gpu_us
    message = (f"{len(ops)} matrix op(s) holding {share:.0f}% of the GPU time run far under "
               f"the device's roof: {worst['op']} at {worst['tflops'] or 0:.3g} TFLOP/s "
               f"({'n/a' if pct is None else f'{pct:.0f}%'} of its roofline), "
               f"{'; '.join(worst['reasons'])}.")
    return Diagnostic(id="low-efficiency", severity="warning", message=message,
                      evidence={"device": eff.device, "ops": ops,
                                "gpu_share_pct": round(share, 1),
                                "mfu_pct": eff.mfu_pct}, hint=hint[:1].upper() + hint[1:])
