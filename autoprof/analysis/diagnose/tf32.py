"""`fp32_matmul`: fp32 matrix products on CUDA cores of a GPU whose tensor cores take TF32.

With `torch.backends.cuda.matmul.allow_tf32 = False` (the default since torch 1.12) an fp32
matrix product runs on the CUDA cores (`sgemm`, `simt` or `ffma` in its GEMM kernel's name);
with TF32 allowed it runs on the tensor cores (`tf32`, `tensorop` in the name), 7.4x the peak
on an H100 SXM. The evidence and the gain:

- evidence: GPU kernels of the profiled steps whose name holds SIMT_GEMM and no TF32 mark,
  on a device whose peak table (metrics/peaks.py) gives both an fp32 and a tf32 figure
  (Ampere and newer); they must hold at least MIN_SHARE of the steps' GPU time, or the
  finding is left out;
- fix: `tf32`: `torch.backends.cuda.matmul.allow_tf32 = True` (or
  `torch.set_float32_matmul_precision("high")`); the hint adds bf16 autocast where the
  steps' GPU is busy COMPUTE_FROM_PCT (the compute-bound verdict's share) or more of the
  step, and below it says bf16 autocast may run slower (time it first): autocast puts a
  cast before each op it converts, more launches for a host that holds the GPU up already.
  On the H100 held-out programs bf16 autocast measured 6.53x and 2.22x on steps whose GPU
  was busy 98% and 97%, and 0.61-0.66x on a Conformer whose GPU was busy 22%
  (`benchmarks/gpu/heldout_fresh*.py`);
- gain: each such kernel (by name, at its median duration) replayed `tf32 / fp32` peak times
  faster, but no shorter than MIN_TF32_KERNEL_US (`FasterKernels`), the rest of the step as
  it was, at the untraced call's pace.
- `bf16_matmul` / `bf16-autocast`, beside it where the GPU is busy COMPUTE_FROM_PCT or more
  (`matmul_fixes` gives both): the same kernels `bf16 / fp32` peak times faster (14.8x on the H100
  SXM), no shorter than the same floor; everything else as it was: the elementwise ops that
  would read bf16 activations, the casts autocast adds and the ops it keeps in fp32 are not
  modelled. On the three development programs of the H100 sets (estimates read, nothing
  fitted to them): an fp32 GPT 3.74x against 4.26x measured (-12%), an fp32 MLP 8.23x
  against 6.53x (+26%: its products ran short of the bf16 peak's ratio), a ViT 2.13x
  against 2.22x (-4%).

Measured: on the H100 catalogue's fp32 matmul (2048 x 2048, TF32 off) this predicts 7.2x
against 6.87x measured without the profiler (+5%): the SIMT kernel reached 75% of the fp32
peak and the TF32 one 70% of the tf32 peak, so the ratio of peaks held there. Square fp32
products timed on the same H100 with TF32 off and on (CUDA events over 20 back-to-back
products): 256: 27.8 -> 20.1 us (1.38x), 512: 21.2 -> 12.5 (1.70x), 1024: 57.3 -> 25.9
(2.21x), 2048: 343 -> 51.0 (6.72x), 4096: 2660 -> 346 (7.68x). Below 2048 the TF32 kernel
does not shrink with the peak ratio (too few output tiles for the SMs): the floor
MIN_TF32_KERNEL_US is the 1024 product's TF32 time, so 1024 is predicted 2.3x, 512 and 256
no gain (a safe under-estimate). On the catalogue's pageable MLP (fp32 Linear layers of
1024-2048 on a batch of 4096) this predicts 1.15x; timed by hand on the H100, 1.03x (medians
of 3 blocks, one process; the step is held by its pageable copy). The H200 efficiency runs
(tests/data/gpu_h200) pair fp32 products with the same products under TF32, each with its
untraced calls: at 8192 this predicts 6.86x against 7.44x (-8%); at 2048, 2.73x against
4.88x (-44%, outside the interval): that recording predates the timing of the time between
untraced calls, so the profiler's 110 us a step between calls is kept on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.peaks import peak_for
from autoprof.analysis.metrics.replay.changes import Change, FasterKernels
from autoprof.analysis.metrics.replay.replay import predict_speedups
from autoprof.analysis.metrics.stats import factorized, steps_gpu_busy_pct
from autoprof.analysis.metrics.verdict import COMPUTE_FROM_PCT

# the CUDA-core fp32 GEMM kernels: CUTLASS's `simt_sgemm`, cuBLAS's `sgemm` and its
# `xmma_gemm_f32f32_f32f32_..._ffma` (fp32 FMA); a TF32 kernel says `tf32` (`f32f32_tf32f32`)
SIMT_GEMM = ("sgemm", "simt", "ffma")
TF32_MARKS = ("tf32", "tensorop", "hmma")
MIN_SHARE = 0.10  # of the steps' GPU time: below it the fix is not worth a line
MIN_TF32_KERNEL_US = 25.0  # the shortest TF32 product kernel seen (module doc, the H100)
HINT = ("fp32 matrix products run on the CUDA cores: allow TF32 on the tensor cores "
        "(torch.backends.cuda.matmul.allow_tf32 = True, or "
        "torch.set_float32_matmul_precision('high'); 10 mantissa bits, fp32's range)")
BF16 = ", or run them in bf16 (torch.autocast('cuda', dtype=torch.bfloat16))"
BF16_HINT = ("fp32 matrix products hold a GPU that is busy most of the step: run them in bf16 "
             "(torch.autocast('cuda', dtype=torch.bfloat16) around the forward and the loss; "
             "8 mantissa bits, fp32's range, no GradScaler needed); the estimate speeds up "
             "the products alone")
NOT_BF16 = ("; with the GPU busy {busy:.0f}% of the step, bf16 autocast may run slower: it "
            "adds a cast launch before each op it converts, on a host that already holds "
            "the GPU up (time it before keeping it)")


def _fp32_gemms(events: pd.DataFrame) -> pd.DataFrame:
    gpu = events["is_gpu_work"].to_numpy(dtype=bool) & (events["step"] >= 0).to_numpy()
    if not gpu.any():
        return events[gpu]
    codes, uniques = factorized(events["name"])  # each distinct kernel name tested once
    simt = np.fromiter((_simt_gemm(str(u)) for u in uniques), bool, len(uniques))
    return events[gpu & simt[codes]]


def _simt_gemm(name: str) -> bool:
    """Whether a kernel's name is a CUDA-core fp32 GEMM's (SIMT_GEMM, and no TF32_MARKS)."""
    low = name.lower()
    return "gemm" in low and any(m in low for m in SIMT_GEMM) and \
        not any(m in low for m in TF32_MARKS)


def _evidence(events: pd.DataFrame, n_steps: int, step_us: float, device: str | None
              ) -> tuple[pd.DataFrame, float, float] | None:
    """(the fp32 GEMM kernels, the device's fp32 peak, the steps' GPU busy %), or None where
    the module doc's evidence is absent or too small."""
    peak = peak_for(device)
    fp32, tf32 = peak.for_dtype("fp32"), peak.for_dtype("tf32")
    gemms = _fp32_gemms(events)
    if not fp32 or not tf32 or tf32 <= fp32 or gemms.empty or not n_steps or not step_us > 0:
        return None
    gpu = events["is_gpu_work"].to_numpy(dtype=bool) & (events["step"] >= 0).to_numpy()
    if float(gemms["dur_us"].sum()) < MIN_SHARE * float(events["dur_us"][gpu].sum()):
        return None
    return gemms, fp32, steps_gpu_busy_pct(events, n_steps, step_us)


def matmul_fixes(events: pd.DataFrame, n_steps: int, step_us: float, device: str | None,
                 baseline: Sequence[Change] = ()) -> list[dict[str, Any]]:
    """The `fp32_matmul` opportunity, and `bf16_matmul` beside it where the steps' GPU is busy
    COMPUTE_FROM_PCT or more (the module doc), each with its prediction (`baseline`: the
    changes pacing the host to the untraced call); none where the evidence is absent or too
    small."""
    found = _evidence(events, n_steps, step_us, device)
    if found is None:
        return []
    gemms, fp32, busy_pct = found
    peak = peak_for(device)
    entries = [(float(peak.for_dtype("tf32") or 0.0), {
        "cause": "fp32_matmul", "fix": "tf32", "factor_key": "tf32_over_fp32_peak",
        "hint": HINT + (BF16 if busy_pct >= COMPUTE_FROM_PCT else
                        NOT_BF16.format(busy=busy_pct))})]
    bf16 = peak.for_dtype("bf16")
    if bf16 and busy_pct >= COMPUTE_FROM_PCT:
        entries.append((float(bf16), {"cause": "bf16_matmul", "fix": "bf16-autocast",
                                      "factor_key": "bf16_over_fp32_peak", "hint": BF16_HINT}))
    out = [_opportunity(events, gemms, faster / fp32, n_steps, step_us, baseline,
                        {**entry, "busy_pct": busy_pct}) for faster, entry in entries]
    return [o for o in out if o is not None]


def _opportunity(events: pd.DataFrame, gemms: pd.DataFrame, factor: float, n_steps: int,
                 step_us: float, baseline: Sequence[Change],
                 entry: dict[str, Any]) -> dict[str, Any] | None:
    """The step replayed with each GEMM kernel `factor` times faster, no shorter than
    MIN_TF32_KERNEL_US: `entry`'s opportunity (its cause, fix, hint, the evidence's name for
    the factor and the GPU's busy %), or None where no kernel gains."""
    gemm_us = float(gemms["dur_us"].sum())
    median_us = gemms.groupby(gemms["name"].astype(str))["dur_us"].median()
    faster = {str(k): min(factor, max(1.0, float(v) / MIN_TF32_KERNEL_US))
              for k, v in median_us.items()}
    kernels = sorted(k for k, f in faster.items() if f > 1.0)
    if not kernels:
        return None
    got = predict_speedups(events, [FasterKernels(faster[k], kernel=k) for k in kernels],
                           baseline=baseline)
    per_name_us = gemms.groupby(gemms["name"].astype(str))["dur_us"].sum()
    us = sum(float(per_name_us[k]) * (1.0 - 1.0 / faster[k]) for k in kernels) / n_steps
    return {"cause": entry["cause"], "us_per_step": us, "pct_of_step": 100.0 * us / step_us,
            "max_speedup": step_us / (step_us - us) if step_us > us else None,
            "where": [{"name": kernels[0], "us_per_step": gemm_us / n_steps}],
            "hint": entry["hint"],
            "evidence": {"gemm_us_per_step": gemm_us / n_steps, "kernels": len(kernels),
                         entry["factor_key"]: factor, "gpu_busy_pct": entry["busy_pct"]},
            "fix": entry["fix"], "predicted_speedup": got.median,
            "predicted_spread": got.to_json()}
