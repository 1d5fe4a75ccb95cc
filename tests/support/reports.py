"""Small typed reports for tests that need a ``Report`` with a few fields set: each is read
from its JSON with ``Report.from_dict`` (the decoder every summary.json goes through), so a
field given with the wrong type fails here as it would on disk."""

from __future__ import annotations

from typing import Any

from autoprof.analysis.report.model import Report

EMPTY_RUN: dict[str, Any] = {
    "path": "run", "name": "run", "run_id": None, "status": None, "world_size": 1,
    "is_cuda": False, "device": None, "trace_paths": [], "events": 0, "verdict": "cpu-only",
    "verdict_reason": "", "verdict_evidence": {}, "gpu_busy_pct": None, "self_cpu_us": None,
    "self_gpu_us": None, "cpu_gpu_ratio": None, "overhead": {}, "steps": [],
    "warmup_call_ms": [], "wait_call_ms": [], "diagnostics": [],
    "top_ops": {"by_self_cpu": [], "by_self_device": []}, "ranks": [], "straggler_rank": None,
    "breakdown": {}, "opportunities": [], "profiler_overhead": {}, "efficiency": {},
    "whatif": [], "memory": None,
}
OPPORTUNITY: dict[str, Any] = {"cause": "", "us_per_step": None, "pct_of_step": None,
                               "where": [], "hint": None}
DIAGNOSTIC: dict[str, Any] = {"id": "", "severity": "info", "message": "", "evidence": {},
                              "hint": None}


def report(**fields: Any) -> Report:
    """A report of an empty CPU run with ``fields`` (JSON values) in place; each opportunity
    and diagnostic given as a dict needs only the keys the test reads."""
    data = {**EMPTY_RUN, **fields}
    data["opportunities"] = [{**OPPORTUNITY, **o} for o in data["opportunities"]]
    data["diagnostics"] = [{**DIAGNOSTIC, **d} for d in data["diagnostics"]]
    return Report.from_dict(data, where="test report")
