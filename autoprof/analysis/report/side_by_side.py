"""Runs side by side: one row per run, ready to chart (e.g. a size sweep, CPU vs GPU time).

| name | size | verdict | gpu_busy_pct | self_cpu_us | self_gpu_us | ... |
| --- | --- | --- | --- | --- | --- | --- |
| n64 | 64 | overhead-bound | 2.4 | 346.4 | 8.4 | ... |
| n4096 | 4096 | compute-bound | 83.5 | 657.5 | 583.0 | ... |
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from autoprof.analysis.analysis import Analysis
from autoprof.analysis.metrics.problem_size import first_shapes, run_size, stated_size

if TYPE_CHECKING:
    from autoprof.analysis.analysis import RunLike

COMPARE_COLUMNS = [
    "name", "path", "size", "input_dims", "verdict", "gpu_busy_pct", "self_cpu_us",
    "self_gpu_us", "cpu_gpu_ratio", "steps", "step_cpu_span_us_median",
    "step_gpu_work_us_median", "kernels", "host_syncs_in_steps", "world_size", "size_stated",
]


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


def compare(runs: Sequence[RunLike]) -> pd.DataFrame:
    """One row per run, in the order given (columns: COMPARE_COLUMNS)."""
    rows = []
    for run, name in zip(runs, _unique_names(runs), strict=True):
        analysis = Analysis.of(run)
        events: pd.DataFrame = run.events
        ov = analysis.overhead
        rows.append({
            "name": name,
            "path": str(run.path),
            "size": run_size(analysis.record, events, str(run.path)),  # a sweep's axis
            "size_stated": stated_size(analysis.record, str(run.path)),  # never guessed
            "input_dims": first_shapes(events) if "input_dims" in events else "",
            "verdict": analysis.verdict.kind,
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
