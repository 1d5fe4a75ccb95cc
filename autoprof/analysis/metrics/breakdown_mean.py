"""The mean of a breakdown (metrics/breakdown.py's ``Breakdown.mean``): the summary's
``breakdown`` key, with each step's buckets and the time between calls."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.kinds import BUCKETS

TOP_BETWEEN = 3  # names of the time between calls in the mean


def mean_of(steps: pd.DataFrame, between: pd.DataFrame, between_where: pd.DataFrame
            ) -> dict[str, object]:
    """Mean step time and mean bucket times over the steps, `autoprof_us` (autoprof's own
    time left out, mean), the time between calls (`_mean_between`) and `per_step` (each
    step's)."""
    n = len(steps)
    step_us = float(steps["step_us"].mean()) if n else 0.0
    buckets = {b: float(steps[f"{b}_us"].mean()) if n else 0.0 for b in BUCKETS}
    pct = {b: 100.0 * v / step_us if step_us > 0 else 0.0 for b, v in buckets.items()}
    by_step = _between_by_step(between)
    per_step = [{"rank": int(r["rank"]), "step": int(r["step"]),
                 "step_us": float(r["step_us"]),
                 "buckets_us": {b: float(r[f"{b}_us"]) for b in BUCKETS},
                 **_step_between(by_step, r)}
                for r in steps.to_dict(orient="records")]
    return {"step_us": step_us, "buckets_us": buckets, "buckets_pct": pct,
            "steps": n,
            "autoprof_us": float(steps["autoprof_us"].mean()) if n else 0.0,
            **_mean_between(steps, between, between_where, step_us),
            "per_step": per_step}


def _between_by_step(between: pd.DataFrame) -> dict[tuple[object, object], dict[str, float]]:
    """Each (rank, step)'s time between calls per bucket, read once (a step number twice in
    one rank: the first)."""
    out: dict[tuple[object, object], dict[str, float]] = {}
    columns = [between[f"{b}_us"].tolist() for b in BUCKETS]
    for i, key in enumerate(zip(between["rank"].tolist(), between["step"].tolist(),
                                strict=True)):
        if key not in out:
            out[key] = {b: float(col[i]) for b, col in zip(BUCKETS, columns, strict=True)}
    return out


def _step_between(between: dict[tuple[object, object], dict[str, float]],
                  row: dict[str, object]) -> dict[str, object]:
    """One step's time between calls, in all and per bucket (None without a call)."""
    us = row.get("between_calls_us")
    got = between.get((row["rank"], row["step"]))
    if not isinstance(us, float) or not np.isfinite(us) or got is None:
        return {"between_calls_us": None, "between_calls_buckets_us": None}
    return {"between_calls_us": us, "between_calls_buckets_us": dict(got)}


def _mean_between(steps: pd.DataFrame, between: pd.DataFrame, between_where: pd.DataFrame,
                  step_us: float) -> dict[str, object]:
    """`between_calls_us` (mean over the steps with a call), its share of the mean step
    `between_calls_pct`, per bucket `between_calls_buckets_us`, and `between_calls_where`
    (what the caller's loop does with the GPU idle, largest first); None without a call."""
    has = steps["between_calls_us"].notna() if len(steps) else pd.Series(dtype=bool)
    if not bool(has.any()):
        return {"between_calls_us": None, "between_calls_pct": None,
                "between_calls_buckets_us": None, "between_calls_where": []}
    us = float(steps.loc[has, "between_calls_us"].mean())
    buckets = {b: float(between[f"{b}_us"].mean()) for b in BUCKETS}
    n = int(has.sum())
    names = between_where.groupby("name", sort=False)["us"].sum().sort_values(
        ascending=False, kind="stable").head(TOP_BETWEEN)
    return {"between_calls_us": us,
            "between_calls_pct": 100.0 * us / step_us if step_us > 0 else 0.0,
            "between_calls_buckets_us": buckets,
            "between_calls_where": [{"name": str(k), "us_per_step": float(v) / n}
                                    for k, v in names.items()]}
