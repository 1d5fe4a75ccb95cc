"""``try_fixes="auto"``: the fixes a run's own analysis points at.

Read from the run's typed report (analysis/report/model): each opportunity's ``cause``
(attribution's ``host_launch``, ``host_sync``, ...) first, then the verdict
and the diagnostics' ids. ``inference-mode`` and ``channels-last`` are always added: their
preconditions look at the call itself (outputs with autograd history, 4-D inputs).

- host_launch, host_untraced, overhead-bound, short-kernels, gpu-idle: cuda-graph,
  compile-reduce-overhead, compile;
- host_sync, host-sync: cuda-graph (reported not applicable, naming the line that syncs);
- gpu_memory: compile, bf16; gpu_compute, compute-bound: bf16, compile; mixed: compile, bf16;
  cpu-only, cpu-dispatch-bound: compile;
- a CPU run's heaviest op (``cpu_op``): a matrix product, convolution or attention
  (``cpu_matrix_op``): bf16, compile, the order its hint names them; any other op: compile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from autoprof.analysis.metrics.flops import is_matrix_op
from autoprof.record.whatif.fixes import FIXES

if TYPE_CHECKING:
    from autoprof.analysis.report.model import Opportunity, Report

LAUNCH = ("cuda-graph", "compile-reduce-overhead", "compile")
SUGGESTED: dict[str, tuple[str, ...]] = {
    "host_launch": LAUNCH,
    "overhead-bound": LAUNCH,
    "short-kernels": LAUNCH,
    "gpu-idle": LAUNCH,
    "host_untraced": LAUNCH,  # Python between ops: a graph replays without it
    "host_sync": ("cuda-graph",),
    "gpu_memory": ("compile", "bf16"),  # fusion and half-width types move fewer bytes
    "gpu_compute": ("bf16", "compile"),
    "host-sync": ("cuda-graph",),
    "compute-bound": ("bf16", "compile"),
    "mixed": ("compile", "bf16"),
    "cpu-only": ("compile",),
    "cpu-dispatch-bound": ("compile",),  # a Python loop of tiny ops: fusion removes dispatch
    "cpu_op": ("compile",),
    "cpu_matrix_op": ("bf16", "compile"),  # arithmetic: a faster precision first, as its hint
}
ALWAYS = ("inference-mode", "channels-last")


def signals(report: Report | None) -> list[str]:
    """What the run says, most specific first: opportunity causes, then verdict, diagnostics
    (none without a report)."""
    if report is None:
        return []
    return [*(_cause(o) for o in report.opportunities if o.cause),
            *([report.verdict] if report.verdict else []),
            *(d.id for d in report.diagnostics if d.id)]


def _cause(opp: Opportunity) -> str:
    """An opportunity's cause; a CPU run's heaviest op that is arithmetic tensor cores or
    AMX run (``is_matrix_op``) reads ``cpu_matrix_op``."""
    where = opp.where[0].name if opp.where else ""
    return "cpu_matrix_op" if opp.cause == "cpu_op" and is_matrix_op(where) else opp.cause


def cuda_run(report: Report | None) -> bool:
    """Whether the run did CUDA work: its report's ``is_cuda``, else (no report) whether
    this process has a CUDA device."""
    if report is not None:
        return report.is_cuda
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _offered(name: str, report: Report | None) -> bool:
    """CUDA-only fixes (cuda-graph, compile-reduce-overhead) are never suggested on CPU runs."""
    return not FIXES[name].cuda_only or cuda_run(report)


def suggested(report: Report | None) -> list[str]:
    """Fix names for a run's report, each once, in the order the signals name them."""
    names = [*(n for s in signals(report) for n in SUGGESTED.get(s, ())), *ALWAYS]
    return _unique(n for n in names if _offered(n, report))


def suggested_by(name: str, report: Report | None) -> list[str]:
    """The run's signals (opportunity causes, verdict, diagnostic ids) that name fix ``name``
    (none for a CUDA-only fix on a CPU run)."""
    if name in FIXES and not _offered(name, report):
        return []
    return _unique(s for s in signals(report) if name in SUGGESTED.get(s, ()))


ACCEPTED = "'auto', 'all', a fix name or a list/tuple of fix names"


def resolve(try_fixes: object, report: Report | None = None) -> list[str]:
    """``"auto"``, ``"all"``, one fix name or a sequence of names, as a checked list; anything
    else is a ValueError naming the accepted values."""
    if isinstance(try_fixes, str):
        if try_fixes == "auto":
            return suggested(report)
        if try_fixes == "all":
            return list(FIXES)
        try_fixes = (try_fixes,)
    if not isinstance(try_fixes, list | tuple) or not all(isinstance(n, str) for n in try_fixes):
        raise ValueError(f"try_fixes must be {ACCEPTED} ({', '.join(FIXES)}); "
                         f"got {try_fixes!r} ({type(try_fixes).__name__})")
    names = _unique(try_fixes)
    unknown = [n for n in names if n not in FIXES]
    if unknown:
        raise ValueError(f"try_fixes: unknown fix(es) {unknown}; known: {list(FIXES)}, "
                         "or 'auto' / 'all'")
    return names


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def predicted_for(name: str, report: Report | None) -> float | None:
    """The analysis's replayed prediction for fix ``name``: ``predicted_speedup`` of the first
    opportunity whose ``fix`` names it; None when the report has none."""
    opp = _opportunity_for(name, report)
    value = None if opp is None else opp.predicted_speedup
    return float(value) if isinstance(value, int | float) else None


def interval_for(name: str, report: Report | None) -> tuple[float, float] | None:
    """The interval (low, high) that opportunity states a measured gain is expected in
    (``predicted_interval``); None when it states none."""
    opp = _opportunity_for(name, report)
    band = None if opp is None else opp.predicted_interval  # UNSET: not a dict
    if not isinstance(band, dict):
        return None
    low, high = band.get("low"), band.get("high")
    if (isinstance(low, int | float) and isinstance(high, int | float)
            and not isinstance(low, bool) and not isinstance(high, bool)):
        return float(low), float(high)
    return None


def _opportunity_for(name: str, report: Report | None) -> Opportunity | None:
    for opp in report.opportunities if report is not None else []:
        value = opp.predicted_speedup
        if opp.fix == name and isinstance(value, int | float) and not isinstance(value, bool):
            return opp
    return None
