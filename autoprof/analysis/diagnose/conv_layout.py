"""`conv_layout`: cuDNN transposing NCHW activations around each convolution, offered as
channels_last (and `cudnn.benchmark` where the manifest says it is off).

A convolution on contiguous (NCHW) tensors whose fastest cuDNN kernel is an NHWC one runs
as three kernels: `nchwToNhwcKernel` on the input (and the weight), the NHWC convolution,
`nhwcToNchwKernel` on the output; on the H100 catalogue's conv net (fp32, 64 channels,
64 x 64, TF32 allowed for cuDNN as torch's default) the transposes held a quarter of the
step's GPU time. With the model and its inputs in `torch.channels_last` the activations are
NHWC already and the transposes go.

- evidence: GPU kernels of the profiled steps named LAYOUT_MARKS (cuDNN's layout
  transposes), launched under a convolution op (`aten::cudnn_convolution`,
  `aten::convolution_backward`, ...); they must hold at least MIN_SHARE of the steps' GPU
  time, or nothing is said;
- fix: `channels-last`: `model.to(memory_format=torch.channels_last)` once and the inputs
  `x.to(memory_format=torch.channels_last)` where the batch is made (not per step);
- gain: the transposes' launches and their kernels removed (`RemoveSpans` over their launch
  calls), the rest of the step as it was; the convolutions keep their kernels (the NHWC
  kernel is the one that ran). A first layer of few channels may pick another kernel, which
  the trace cannot say;
- `cudnn.benchmark`: named in the hint only where the manifest records it off (None: the
  recording predates the field, and the hint says to set it if it is not); its gain is not
  predicted (the trace does not say which algorithm timing would pick: on the catalogue's
  conv net it gained 1.03x, timed without the profiler).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.span_fixes import opportunity, replayed
from autoprof.analysis.metrics.replay.changes import Change
from autoprof.analysis.metrics.stats import factorized

LAYOUT_MARKS = ("nchwtonhwc", "nhwctonchw")  # cuDNN's engines_precompiled transposes
CONV_MARK = "convolution"
MIN_SHARE = 0.10  # of the steps' GPU time
_MAX_DEPTH = 32


def _step_gpu(events: pd.DataFrame) -> np.ndarray:
    """Mask of the GPU work inside the profiled steps."""
    return np.asarray(events["is_gpu_work"].to_numpy(dtype=bool)
                      & (events["step"] >= 0).to_numpy(), dtype=bool)


def _transposes(events: pd.DataFrame, in_steps: np.ndarray) -> pd.DataFrame:
    """The rows of `in_steps` named as layout transposes (only those rows are copied)."""
    if not in_steps.any():
        return events.iloc[:0]
    codes, uniques = factorized(events["name"])
    hit = np.fromiter((any(m in str(u).lower() for m in LAYOUT_MARKS) for u in uniques), bool,
                      len(uniques))
    return events[in_steps & hit[codes]]


def conv_op(events: pd.DataFrame, row: int) -> str | None:
    """The outermost `aten::` op above host row `row` when a convolution op is among its
    ancestors (the op the user's line called: `aten::conv2d`), else None."""
    names, parents = events["name"], events["parent"]
    conv, outer = False, None
    at, depth = row, 0
    while at >= 0 and at in events.index and depth < _MAX_DEPTH:
        name = str(names.at[at])
        conv |= CONV_MARK in name
        outer = name if name.startswith("aten::") else outer
        parent = parents.at[at]
        at, depth = (int(parent) if pd.notna(parent) else -1), depth + 1
    return outer if conv else None


def _cudnn_benchmark_hint(benchmark: bool | None) -> str:
    if benchmark is None:
        return ("; and set torch.backends.cudnn.benchmark = True if the program does not "
                "(this recording does not say; its gain is not predicted)")
    if not benchmark:
        return ("; cudnn.benchmark is off in this run: torch.backends.cudnn.benchmark = True "
                "lets cuDNN time its algorithms for each shape (its gain is not predicted)")
    return ""


def conv_layout(events: pd.DataFrame, n_steps: int, step_us: float,
                baseline: Sequence[Change] = (),
                cudnn_benchmark: bool | None = None) -> dict[str, Any] | None:
    """The `conv_layout` opportunity with its prediction, or None (the module doc's evidence
    absent or under MIN_SHARE)."""
    in_steps = _step_gpu(events)
    moves = _transposes(events, in_steps)
    if moves.empty or not n_steps or not step_us > 0:
        return None
    launch = moves["launch_row"].to_numpy()
    known = (launch >= 0) & np.isin(launch, events.index.to_numpy())
    moves, launch = moves[known], launch[known]
    ops = [conv_op(events, int(r)) for r in launch]
    conv = np.array([o is not None for o in ops], bool)
    moves, launch = moves[conv], launch[conv]
    move_us = float(moves["dur_us"].sum())
    gpu_us = float(events["dur_us"][in_steps].sum())
    if moves.empty or move_us < MIN_SHARE * gpu_us:
        return None
    per_op = pd.Series(moves["dur_us"].to_numpy(), index=[o for o in ops if o is not None])
    top = per_op.groupby(level=0).sum().sort_values(ascending=False)
    us = move_us / n_steps
    hint = (f"cuDNN transposes the activations around the convolutions, {len(moves) / n_steps:g}"
            f" layout kernels a step ({us:.0f} us of GPU time): the tensors are NCHW "
            "(contiguous) and its kernels run NHWC. Convert once: "
            "model = model.to(memory_format=torch.channels_last), and each batch "
            "x = x.to(memory_format=torch.channels_last) where it is made"
            + _cudnn_benchmark_hint(cudnn_benchmark))
    opp = opportunity("conv_layout", "channels-last", us, step_us,
                      [{"name": str(n), "us_per_step": float(v) / n_steps}
                       for n, v in top.head(3).items()], hint,
                      {"transposes_per_step": len(moves) / n_steps,
                       "transpose_gpu_us_per_step": us,
                       "share_of_gpu_time": move_us / gpu_us,
                       "cudnn_benchmark": cudnn_benchmark})
    got = replayed(events, events.loc[launch], baseline)
    return {**opp, **got} if got is not None else None
