"""``answer_report(answer)``: the reduce's answer as the run's ``Report``, the type every
renderer, the JSON and the viewer read for a run read as one table too.

The common fields hold what the reduce computes (reduce.py), each by the rule the merged
summary applies where the ranks' small results allow it:

- ``verdict``: the breakdown rule (metrics/verdict.py, ``classify_sides``) over the run's
  mean step (every rank's steps, weighted by their counts); the reason gives the sides'
  shares and the count of each rank's own verdict. The merged summary reads the median step
  where there are three or more; the reduce keeps no step's buckets, so it reads the mean;
- ``self_cpu_us``, ``self_gpu_us``: the ranks' sums (the merged table's sums over the same
  events); ``cpu_gpu_ratio`` their ratio; ``gpu_busy_pct``: the ranks' mean;
- ``ranks``: one row per rank (its rank-table columns, verdict and reason, breakdown, memory
  peaks, events, trace); ``breakdown``, ``straggler_rank``, ``events`` as reduced;
- the run's name, id, status, device and call times from its manifest, as the merged
  summary gives them.

What needs the events (steps, diagnostics, top ops, opportunities, what-if, the overhead,
efficiency and memory records) is empty; the ``rank_by_rank`` section holds the rest of the
answer (report/model/ranks.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from autoprof.analysis.metrics.verdict import DOMINANT_PCT, classify_sides, sides
from autoprof.analysis.report.model import Report
from autoprof.analysis.report.summary import jsonable
from autoprof.analysis.scale.reduce import RunAnswer
from autoprof.units import fmt_us


def _verdict(answer: RunAnswer) -> tuple[str, str, dict[str, Any]]:
    """The kind, reason and evidence of the breakdown rule over the run's mean step."""
    bd = answer.breakdown
    pct: dict[str, float] = bd.get("buckets_pct") or {}
    has_gpu = any(r.verdict != "cpu-only" for r in answer.ranks)
    kind = classify_sides(pct if bd.get("steps") else None, has_gpu)
    share = sides(pct)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(answer.verdicts.items()))
    if not bd.get("steps"):
        reason = "no rank has a profiled step"
    else:
        reason = (f"of the mean step of every rank ({fmt_us(bd.get('step_us'))}) the host side "
                  f"holds {share['host']:.0f}%, GPU work {share['gpu']:.0f}%, exposed "
                  f"communication {share['communication']:.0f}%")
        if kind == "mixed" and has_gpu:
            reason += f": no side holds {DOMINANT_PCT:.0f}% of the step"
    reason += f" (ranks analysed one by one; each rank's own verdict: {counts or 'none'})"
    evidence = {"sides_pct": share, "dominant_pct": DOMINANT_PCT,
                "step_us": bd.get("step_us"), "rank_verdicts": dict(answer.verdicts)}
    return kind, reason, evidence


def _sum(answer: RunAnswer, column: str) -> float | None:
    values = [float(v) for r in answer.ranks if isinstance(v := r.row.get(column), int | float)]
    return float(sum(values)) if values else None


def _mean(answer: RunAnswer, column: str) -> float | None:
    values = [float(v) for r in answer.ranks if isinstance(v := r.row.get(column), int | float)]
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else None


def _status(answer: RunAnswer, missing: list[int]) -> str | None:
    status = answer.record.status if answer.record is not None else None
    return "partial" if missing and status in (None, "complete") else status


def answer_report(answer: RunAnswer) -> Report:
    """The run's report from the reduce's answer (module doc); ValueError when a rank's
    record does not fit the type."""
    record = answer.record
    kind, reason, evidence = _verdict(answer)
    cpu_us, gpu_us = _sum(answer, "self_cpu_us"), _sum(answer, "self_gpu_us")
    seen = {r.rank for r in answer.ranks}
    named = set(record.missing_ranks or ()) if record is not None else set()
    absent = set(range(answer.world_size)) - seen if seen else set()
    missing = sorted(named | absent)
    is_cuda = any(r.verdict != "cpu-only" for r in answer.ranks)
    device: Any = record.device if record is not None and record.device else (
        "cuda" if is_cuda else None)
    out = {
        "path": answer.path,
        "name": record.name if record is not None and record.name else Path(answer.path).name,
        "run_id": (record.run_id or Path(answer.path).name) if record is not None else None,
        "status": _status(answer, missing),
        "world_size": answer.world_size,
        "missing_ranks": missing,
        "is_cuda": is_cuda,
        "device": device,
        "trace_paths": [r.trace for r in answer.ranks],
        "events": answer.events,
        "verdict": kind,
        "verdict_reason": reason,
        "verdict_evidence": evidence,
        "gpu_busy_pct": _mean(answer, "gpu_busy_pct"),
        "self_cpu_us": cpu_us,
        "self_gpu_us": gpu_us,
        "cpu_gpu_ratio": cpu_us / gpu_us if cpu_us is not None and gpu_us else None,
        "overhead": {},
        "steps": [],
        "warmup_call_ms": list(record.warmup_call_ms) if record is not None else [],
        "wait_call_ms": list(record.wait_call_ms) if record is not None else [],
        "profiler_start_ms": record.profiler_start_ms if record is not None else None,
        "diagnostics": [],
        "top_ops": {"by_self_cpu": [], "by_self_device": []},
        "ranks": [{**r.row, "verdict_reason": r.verdict_reason,
                   "breakdown": r.breakdown, "memory_peaks": r.memory_peaks,
                   "events": r.events, "trace": r.trace} for r in answer.ranks],
        "straggler_rank": answer.straggler_rank,
        "breakdown": answer.breakdown,
        "opportunities": [],
        "profiler_overhead": {},
        "efficiency": {},
        "whatif": [],
        "memory": None,
        "rank_by_rank": {
            "ranks_analysed": len(answer.ranks), "spread": answer.spread,
            "worst_ranks": answer.worst_ranks, "worst_by": answer.worst_by,
            "outliers": answer.outliers, "verdicts": answer.verdicts,
            "warnings": answer.warnings},
    }
    return Report.from_dict(jsonable(out), where=f"{answer.path or 'run'} (rank by rank)")
