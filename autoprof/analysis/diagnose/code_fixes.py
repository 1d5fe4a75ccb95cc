"""Opportunities no bucket names: a change to one line of the user's code, replayed.

The breakdown's buckets say where a step's time goes; some fixes a user applies cut across
them. Two are found from the trace alone and replayed (metrics/replay/fixes.py):

| cause | fix | found as |
| --- | --- | --- |
| `optimizer_ops` | `fused-optimizer` | an `Optimizer.step#<Name>.step` region, no fused op in it |
| `bias_add` | `addmm` | an `aten::add` of a bias right after its matrix product |
| `pageable_copies` | `pin-memory` | host-to-device copies from pageable memory (pageable.py) |
| `amp_scaler` | `bf16-autocast` | GradScaler's unscale op and its found_inf `.item()` sync |
| `fp32_matmul` | `tf32` | fp32 GEMMs on CUDA cores of a GPU with TF32 tensor cores (tf32.py) |
| `bf16_matmul` | `bf16-autocast` | the same GEMMs on a GPU busy most of the step (tf32.py) |
| `conv_layout` and three more | `channels-last`, ... | work the fix deletes (deleting.py) |

The hints name the change: `torch.optim.<Name>(..., fused=True)`, `torch.addmm(b, x, w)`,
`x.pin_memory()` and `.to(device, non_blocking=True)`, `torch.autocast(..., dtype=
torch.bfloat16)` without a GradScaler.

Each is offered only when its replayed gain, at the untraced call's pace, is at least
MIN_SPEEDUP: a smaller one is within what two runs of the same program differ by. Its
`us_per_step` is the host time the fix acts on (the optimizer's region; the adds' ops),
`max_speedup` the step without that time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.deleting import deleting_fixes
from autoprof.analysis.diagnose.pageable import pageable_copies
from autoprof.analysis.diagnose.tf32 import matmul_fixes
from autoprof.analysis.metrics.replay.bias import bias_adds
from autoprof.analysis.metrics.replay.changes import OPTIMIZER_STEP_PREFIX, Change
from autoprof.analysis.metrics.replay.fixes import FixName, predict_fix
from autoprof.analysis.metrics.replay.scaler import UNSCALE, scaler_rows_of
from autoprof.analysis.metrics.stats import cpu_mask, isin_mask, name_matches, sorted_distinct

MIN_SPEEDUP = 1.03
FUSED_OP = "aten::_fused_"  # aten::_fused_adamw_, aten::_fused_sgd_: fused already
HOST_COLUMNS = ("name", "step", "dur_us", "parent", "ts_us")  # what the checks below read

# why a fix of the call is not predicted in a loop that waits for DataLoader worker processes
WORKERS_UNSEEN = ("not predicted: the loop waits for the DataLoader's worker processes, whose "
                  "pace the trace does not show; a faster step gains only as far as they keep "
                  "up")


def _in_steps(events: pd.DataFrame) -> np.ndarray:
    """Mask of the host rows of the profiled steps (the checks copy only the columns they
    read of these: a copy of every column of half a 1M-row table costs more than the
    checks)."""
    return np.asarray(cpu_mask(events) & (events["step"] >= 0).to_numpy(), dtype=bool)


def _starts_with(names: pd.Series, prefix: str) -> np.ndarray:
    """Mask of `names` starting with `prefix` (tested once per distinct name)."""
    return name_matches(names, re.compile("^" + re.escape(prefix)))


def _per_step_us(rows: pd.DataFrame, n_steps: int) -> float:
    return float(rows["dur_us"].sum()) / n_steps if n_steps else 0.0


def _opportunity(cause: str, fix_us: float, step_us: float, where: list[dict[str, Any]],
                 hint: str) -> dict[str, Any]:
    return {"cause": cause, "us_per_step": fix_us,
            "pct_of_step": 100.0 * fix_us / step_us if step_us > 0 else 0.0,
            "max_speedup": step_us / (step_us - fix_us) if step_us > fix_us else None,
            "where": where, "hint": hint}


def _host_rows(events: pd.DataFrame, in_steps: np.ndarray, picked: np.ndarray
               ) -> pd.DataFrame:
    """The host rows of the profiled steps that `picked` (a mask of `events`) holds, with the
    columns the checks read: the few rows a check reads, not a copy of every host row."""
    return events.loc[in_steps & picked, [c for c in HOST_COLUMNS if c in events.columns]]


def _optimizer(events: pd.DataFrame, in_steps: np.ndarray, n_steps: int, step_us: float
               ) -> dict[str, Any] | None:
    regions = _host_rows(events, in_steps, _starts_with(events["name"], OPTIMIZER_STEP_PREFIX))
    if not len(regions) or (in_steps & _starts_with(events["name"], FUSED_OP)).any():
        return None
    region = str(regions["name"].mode().iloc[0])  # Optimizer.step#AdamW.step
    optimizer = region[len(OPTIMIZER_STEP_PREFIX):].split(".")[0] or "the optimizer"
    outer = regions[~regions["parent"].isin(regions.index)] if "parent" in regions else regions
    us = _per_step_us(outer, n_steps)
    hint = (f"use the fused optimizer: torch.optim.{optimizer}(..., fused=True) updates every "
            "parameter in one kernel launch per step instead of a launch per tensor op")
    return _opportunity("optimizer_ops", us, step_us,
                        [{"name": region, "us_per_step": us}], hint)


def _bias_add(events: pd.DataFrame, in_steps: np.ndarray, rows: np.ndarray, n_steps: int,
              step_us: float) -> dict[str, Any] | None:
    if not len(rows):
        return None
    adds = _host_rows(events, in_steps, events.index.isin(rows))
    us = _per_step_us(adds, n_steps)
    hint = ("fold the bias add into the matrix product: write x @ w + b as "
            "torch.addmm(b, x, w) (or F.linear(x, w.T, b)); the GEMM adds the bias as it "
            "writes its result, one launch and one pass over the output fewer")
    return _opportunity("bias_add", us, step_us,
                        [{"name": "aten::add after aten::matmul", "us_per_step": us}], hint)


def _scaler(events: pd.DataFrame, in_steps: np.ndarray, n_steps: int, step_us: float
            ) -> dict[str, Any] | None:
    if not (in_steps & isin_mask(events["name"], (UNSCALE,))).any():
        return None
    host = _host_rows(events, in_steps, np.ones(len(events), dtype=bool))
    parent = host.index.get_indexer(host["parent"].fillna(-1).astype("int64"))
    rows = host.iloc[scaler_rows_of(host["name"].astype(str).to_numpy(),
                                    host["ts_us"].to_numpy(float), parent)]
    us = _per_step_us(rows, n_steps)
    hint = ("GradScaler syncs every step: scaler.step() reads found_inf with .item() after "
            "unscaling, the host waiting for the whole backward pass. On a GPU with bf16 "
            "(Ampere or newer) use torch.autocast(device_type='cuda', dtype=torch.bfloat16) "
            "and drop the GradScaler (bf16 has fp32's range: no loss scaling); or keep fp16 "
            "with a fused optimizer (fused=True), whose step reads found_inf on the device")
    return _opportunity("amp_scaler", us, step_us,
                        [{"name": UNSCALE, "us_per_step": us}], hint)


def unpredicted(opp: dict[str, Any]) -> dict[str, Any]:
    """`opp` offered with its bound only, in a loop that waits for DataLoader worker
    processes (`baseline.worker_loop`), and the reason."""
    return {**opp, "hint": f"{opp['hint']} ({WORKERS_UNSEEN})"}


def code_fixes(events: pd.DataFrame, call: str | None, baseline: Sequence[Change],
               step_us: float, worker_loop: bool = False,
               device: str | None = None,
               cudnn_benchmark: bool | None = None) -> list[dict[str, Any]]:
    """The opportunities of the module doc that a run shows, each with its prediction
    (`step_us`: the mean profiled step; `worker_loop`: the loop waits for DataLoader worker
    processes, so a fix the replay predicts a gain for is offered with its bound only,
    `unpredicted`; `device`: the device's name, whose link sets a pinned copy's rate;
    `cudnn_benchmark`: the manifest's flag, for the channels-last hint).
    Raises ValueError where the replay cannot run."""
    in_steps = _in_steps(events)
    n_steps = len(sorted_distinct(events["step"].to_numpy()[in_steps]))
    if not n_steps or not step_us > 0:
        return []
    found: list[tuple[dict[str, Any] | None, FixName, float]] = [
        (_optimizer(events, in_steps, n_steps, step_us), "fused-optimizer", 1.0),
        (_bias_add(events, in_steps, bias_adds(events), n_steps, step_us), "addmm", 1.0),
        (_scaler(events, in_steps, n_steps, step_us), "bf16-autocast", 1.0)]
    pageable = pageable_copies(events, n_steps, step_us, device)
    if pageable is not None:
        found.append((pageable[0], "pin-memory", pageable[1]))
    out = []
    for opp, fix, copy_speedup in found:
        if opp is None:
            continue
        got = predict_fix(events, fix, call or "", baseline, copy_speedup=copy_speedup)
        if np.isfinite(got["predicted_speedup"]) and got["predicted_speedup"] >= MIN_SPEEDUP:
            out.append(unpredicted(opp) if worker_loop else {**opp, **got})
    entries = matmul_fixes(events, n_steps, step_us, device, baseline) + deleting_fixes(
        events, n_steps, step_us, baseline, cudnn_benchmark)
    out += [unpredicted(o) if worker_loop else o for o in entries
            if o["predicted_speedup"] >= MIN_SPEEDUP]
    return out
