"""Runs side by side: one row per run, ready to chart (e.g. a size sweep, CPU vs GPU time).

| name | size | verdict | gpu_busy_pct | self_cpu_us | self_gpu_us | ... |
| --- | --- | --- | --- | --- | --- | --- |
| n64 | 64 | overhead-bound | 2.4 | 346.4 | 8.4 | ... |
| n4096 | 4096 | compute-bound | 83.5 | 657.5 | 583.0 | ... |
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.breakdown import breakdown
from autoprof.analysis.metrics.overhead import overhead
from autoprof.analysis.metrics.verdict import verdict_from

if TYPE_CHECKING:
    from autoprof.analysis.diagnose.context import RunLike

COMPARE_COLUMNS = [
    "name", "path", "size", "input_dims", "verdict", "gpu_busy_pct", "self_cpu_us",
    "self_gpu_us", "cpu_gpu_ratio", "steps", "step_cpu_span_us_median",
    "step_gpu_work_us_median", "kernels", "host_syncs_in_steps", "world_size",
]
_SIZE_KEYS = ("size", "n", "problem_size")
_INT = re.compile(r"\d+")
_SIZE_NAME = re.compile(r"^(?:n|size)[-_=]?(\d+)$", re.IGNORECASE)


def _first_shapes(events: pd.DataFrame) -> str:
    """`input_dims` of the first CPU op (in profiler steps when there are any) with shapes."""
    is_op = events["cat"].eq("cpu_op").to_numpy(dtype=bool)
    ops = events[is_op & events["input_dims"].ne("").to_numpy(dtype=bool)]
    in_steps = ops[ops["step"].to_numpy() >= 0]
    pick = in_steps if not in_steps.empty else ops
    return "" if pick.empty else str(pick.sort_values("ts_us").iloc[0]["input_dims"])


def _size_in_path(path: str) -> float:
    for part in reversed(Path(path).parts[-3:]):
        m = _SIZE_NAME.match(part.split(".")[0])
        if m:
            return float(m.group(1))
    return np.nan


def run_size(manifest: dict[str, Any] | None, events: pd.DataFrame, path: str = "") -> float:
    """The problem size: `size` / `n` / `problem_size` from the manifest's options (or the
    manifest itself), else the largest input dimension of the first op with recorded shapes,
    else a folder or file named like `n64`, `size64`, `size-64` on the run's path (the last
    three parts); NaN when none is known."""
    for source in (manifest or {}, (manifest or {}).get("options") or {}):
        if isinstance(source, dict):
            for key in _SIZE_KEYS:
                value = source.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    return float(value)
    dims = [int(d) for d in _INT.findall(_first_shapes(events))] if "input_dims" in events else []
    return float(max(dims)) if dims else _size_in_path(path)


def _label(run: RunLike) -> str:
    return str(run.name) if run.name else Path(str(run.path)).name


def _unique_names(runs: Sequence[RunLike]) -> list[str]:
    names = [_label(r) for r in runs]
    counts = Counter(names)
    out = []
    for run, name in zip(runs, names, strict=True):
        path = Path(str(run.path))
        if counts[name] > 1:  # e.g. sweep/n64/trace.json, sweep/n128/trace.json
            parent = path.parent.name if path.suffix else path.name
            name = f"{parent}/{name}" if parent else name
        out.append(name)
    return out


def _call_region(manifest: Any) -> str | None:
    """The region autoprof wraps the call in: the run's name (metrics/breakdown.py)."""
    name = manifest.get("name") if isinstance(manifest, dict) else None
    return name if isinstance(name, str) else None


def compare(runs: Sequence[RunLike]) -> pd.DataFrame:
    """One row per run, in the order given (columns: COMPARE_COLUMNS)."""
    rows = []
    for run, name in zip(runs, _unique_names(runs), strict=True):
        events: pd.DataFrame = run.events
        manifest = run.manifest
        ov = overhead(events)
        rows.append({
            "name": name,
            "path": str(run.path),
            "size": run_size(manifest, events, str(run.path)),
            "input_dims": _first_shapes(events) if "input_dims" in events else "",
            "verdict": verdict_from(ov, breakdown(events, _call_region(manifest)).mean()).kind,
            "gpu_busy_pct": np.nan if ov.gpu_busy_pct is None else ov.gpu_busy_pct,
            "self_cpu_us": ov.self_cpu_us,
            "self_gpu_us": ov.self_gpu_us,
            "cpu_gpu_ratio": np.nan if ov.cpu_gpu_ratio is None else ov.cpu_gpu_ratio,
            "steps": ov.steps,
            "step_cpu_span_us_median": ov.step_cpu_span_us_median,
            "step_gpu_work_us_median": ov.step_gpu_work_us_median,
            "kernels": ov.kernels,
            "host_syncs_in_steps": ov.host_syncs_in_steps,
            "world_size": int(run.world_size or ov.ranks),
        })
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)
