"""What the catalogue's deleting entries share: spans of the step a fix deletes, replayed.

A layout transpose around a convolution (conv_layout.py), a gradient zeroed before backward
adds into it (zero_grad.py), a tensor built on the host then copied to the device
(host_tensors.py) and an all-reduce after a micro-step that only accumulates
(ddp_no_sync.py) are each work the fixed program no longer does. Each entry names the host
spans that do it (a launch call, an op); the replay (`RemoveSpans`) takes out their host
time and the calls made inside them with their cost, GPU work and waits, at the untraced
call's pace (`baseline`), and the gain is the median over the profiled steps.

These entries have no development pairs yet (no fix timed by hand beside their prediction),
so each states its own wide `prediction_error` (NEW_ENTRY_ERROR): its interval runs from
1/(1 + error) to 1/(1 - error) times the estimate (-33% / +100%), never narrower than the
model-error band (error_band.py) its fix family would take.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.replay.changes import Change, RemoveSpans
from autoprof.analysis.metrics.replay.replay import predict_speedups
from autoprof.analysis.metrics.stats import cpu_mask, merge_intervals

NEW_ENTRY_ERROR = 0.5  # no development pairs: -33% / +100% around the estimate


def outermost(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows not inside another of `rows` (by `parent` where recorded, else by time on the
    same thread)."""
    if "parent" in rows.columns:
        return rows[~rows["parent"].isin(rows.index)]
    return rows


def spans_of(rows: pd.DataFrame) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The merged (start, end) host spans of `rows`, in the trace's clock."""
    s, e = merge_intervals(rows["ts_us"].to_numpy(float),
                           (rows["ts_us"] + rows["dur_us"]).to_numpy(float))
    return tuple(float(v) for v in s), tuple(float(v) for v in e)


def replayed(events: pd.DataFrame, rows: pd.DataFrame, baseline: Sequence[Change]
             ) -> dict[str, Any] | None:
    """The fix deleting `rows`' spans, replayed: `predicted_speedup`, `predicted_spread`
    and the entry's stated `prediction_error`; None where the replay gives no number."""
    starts, ends = spans_of(rows)
    got = predict_speedups(events, [RemoveSpans(starts, ends)], baseline=baseline)
    if not np.isfinite(got.median):
        return None
    return {"predicted_speedup": got.median, "predicted_spread": got.to_json(),
            "prediction_error": NEW_ENTRY_ERROR}


def opportunity(cause: str, fix: str, us: float, step_us: float, where: list[dict[str, Any]],
                hint: str, evidence: dict[str, Any]) -> dict[str, Any]:
    """An entry's opportunity before its prediction (`us`: the host time a step the fix
    deletes)."""
    return {"cause": cause, "fix": fix, "us_per_step": us, "pct_of_step": 100.0 * us / step_us,
            "max_speedup": step_us / (step_us - us) if step_us > us else None,
            "where": where, "hint": hint, "evidence": evidence}


def step_host(events: pd.DataFrame) -> pd.DataFrame:
    """The host rows inside the profiled steps."""
    return events[cpu_mask(events) & (events["step"] >= 0).to_numpy()]
