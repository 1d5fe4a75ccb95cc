"""Everything the analysis says about a run, as its typed ``Report`` (report/model):
``summarize(run)``. The record's JSON (``Report.to_dict()``) is what `autoprof summary --json`
prints and what the summary cache stores (summary_cache.py); no consumer reads another dict.

Keys (times in microseconds unless the name says otherwise):
`path`, `name`, `run_id`, `status`, `world_size`, `is_cuda`, `device`, `trace_paths`,
`events`, `verdict` (the kind), `verdict_reason`, `verdict_evidence`, `gpu_busy_pct`,
`self_cpu_us`, `self_gpu_us`, `cpu_gpu_ratio`, `overhead` (every Overhead field), `steps`
(per_step rows), `warmup_call_ms`, `wait_call_ms`, `diagnostics` (`{id, severity, message, evidence,
hint}`), `top_ops` (`by_self_cpu` and `by_self_device`: self_vs_total rows), `ranks`
(rank_table rows), `straggler_rank` (int or null), `efficiency` (metrics/efficiency.py:
`device`, `peak`, `step_tflops`, `mfu_pct`, `kernels`, ...), `whatif` (the fixes
autoprof.check(..., try_fixes=...) measured: whatif.json's results, `[]` when none).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.analysis import Analysis, RunLike
from autoprof.analysis.loader.phase import phase
from autoprof.analysis.metrics.lines import (
    with_diagnostic_lines,
    with_top_ops_lines,
    with_where_lines,
)
from autoprof.analysis.metrics.memory_use import Memory
from autoprof.analysis.report.lines import lines_summary
from autoprof.analysis.report.model import Report
from autoprof.runfolder import Manifest

TOP_OPS = 10
_OP_FIELDS = ["name", "lane", "calls", "self_cpu_us", "cpu_total_us", "self_device_us",
              "device_total_us"]


_PLAIN = frozenset({str, int, bool, type(None)})  # kept as they are (exact types)


def jsonable(value: Any) -> Any:
    """`value` with numpy scalars made Python, NaN/inf made None, tuples made lists."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind in _PLAIN:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [jsonable(r) for r in df.to_dict(orient="records")]


def top_ops(ops: pd.DataFrame, n: int = TOP_OPS) -> dict[str, list[dict[str, Any]]]:
    """The n ops with the most self CPU time and the n GPU rows with the most self device time,
    from an ops table (metrics/ops.self_vs_total: the run's is `Analysis.ops`)."""
    fields = [f for f in _OP_FIELDS if f in ops.columns]
    cpu = ops[ops["self_cpu_us"] > 0].sort_values("self_cpu_us", ascending=False, kind="stable")
    dev = ops[ops["self_device_us"] > 0].sort_values("self_device_us", ascending=False,
                                                     kind="stable")
    if "lane" in dev.columns:
        dev = dev[dev["lane"] == "gpu"]
    return {"by_self_cpu": _records(cpu[fields].head(n)),
            "by_self_device": _records(dev[fields].head(n))}


def _device(run: RunLike, record: Manifest | None) -> Any:
    if record is not None and record.device:
        return record.device
    for meta in run.trace_metadata:
        props = meta.get("deviceProperties") if isinstance(meta, dict) else None
        if isinstance(props, list) and props and isinstance(props[0], dict):
            return {"name": props[0].get("name"), "properties": props[0]}
    return "cuda" if run.is_cuda else None


def _ranks_with_attribution(ctx: Analysis) -> list[dict[str, Any]]:
    """rank_table rows, each with its rank's own breakdown, opportunities and verdict."""
    per_rank = ctx.rank_attribution
    return [{**row, **per_rank.get(int(row["rank"]), {})} for row in _records(ctx.ranks)]


def _status(record: Manifest | None, missing: tuple[int, ...]) -> str | None:
    """The run's status; ``partial`` where ranks of its world have no trace."""
    status = record.status if record is not None else None
    return "partial" if missing and status in (None, "complete") else status


def summarize(run: RunLike) -> Report:
    """The whole analysis of a run as its typed report (see the module doc for keys)."""
    ctx = Analysis.of(run)
    phase("steps and breakdown")
    record = ctx.record
    ov, verdict = ctx.overhead, ctx.verdict
    run_path = run.path
    missing: tuple[int, ...] = tuple(getattr(run, "missing_ranks", ()))
    phase("checks")
    ctx.diagnostics  # noqa: B018 - computed here (cached) to name the phases in order
    phase("predictions")
    ctx.opportunities  # noqa: B018
    phase("efficiency, what-if and memory")
    out: dict[str, Any] = {
        "path": str(run_path),
        "name": run.name,
        "run_id": (record.run_id or Path(str(run_path)).name) if record is not None else None,
        "status": _status(record, missing),
        "world_size": run.world_size or ov.ranks,
        "missing_ranks": list(missing),
        "is_cuda": run.is_cuda,
        "device": _device(run, record),
        "trace_paths": [str(p) for p in run.trace_paths],
        "events": len(ctx.events),
        "verdict": verdict.kind,
        "verdict_reason": verdict.reason,
        "verdict_evidence": verdict.evidence,
        "gpu_busy_pct": ov.gpu_busy_pct,
        "self_cpu_us": ov.self_cpu_us,
        "self_gpu_us": ov.self_gpu_us,
        "cpu_gpu_ratio": ov.cpu_gpu_ratio,
        "overhead": ov.to_dict(),
        "steps": _records(ctx.steps),
        "warmup_call_ms": list(record.warmup_call_ms) if record is not None else [],
        "wait_call_ms": list(record.wait_call_ms) if record is not None else [],
        "profiler_start_ms": record.profiler_start_ms if record is not None else None,
        "diagnostics": with_diagnostic_lines([d.to_dict() for d in ctx.diagnostics],
                                             ctx.source_lines),
        "top_ops": with_top_ops_lines(top_ops(ctx.ops), ctx.source_lines),
        "ranks": _ranks_with_attribution(ctx),
        "straggler_rank": ctx.straggler,
        "breakdown": {**ctx.breakdown.mean(),
                      "between_calls_untraced_us": ctx.between_calls_untraced_us},
        "opportunities": with_where_lines(ctx.opportunities, ctx.source_lines),
        "profiler_overhead": ctx.profiler_overhead,
        "efficiency": ctx.efficiency.to_dict(),
        "whatif": ctx.whatif,
        "memory": memory_summary(ctx.memory),
        **lines_summary(ctx.source_lines),
    }
    return Report.from_dict(jsonable(out), where=str(run_path))


SUMMARY_REGIONS = 20


def memory_summary(memory: Memory | None) -> dict[str, Any] | None:
    """The ``memory`` key of the summary: ``devices``, ``by_region`` (largest first, at most
    SUMMARY_REGIONS) and ``steps`` as lists of rows; None without memory events."""
    if memory is None:
        return None

    def rows(df: pd.DataFrame) -> list[dict[str, Any]]:
        return [{str(k): (None if isinstance(v, float) and not np.isfinite(v) else v)
                 for k, v in r.items()} for r in df.to_dict(orient="records")]

    return {"devices": rows(memory.devices),
            "by_region": rows(memory.by_region.head(SUMMARY_REGIONS)),
            "steps": rows(memory.steps)}
