"""``try_fixes="auto"``: the fixes a run's own analysis points at.

Read from the run's summary dict: each opportunity's ``cause`` (attribution's
``host_launch``, ``host_sync``, ...) first, then the verdict
and the diagnostics' ids. ``inference-mode`` and ``channels-last`` are always added: their
preconditions look at the call itself (outputs with autograd history, 4-D inputs).

- host_launch, host_untraced, overhead-bound, short-kernels, gpu-idle: cuda-graph,
  compile-reduce-overhead, compile;
- host_sync, host-sync: cuda-graph (reported not applicable, naming the line that syncs);
- gpu_memory: compile, bf16; gpu_compute, compute-bound: bf16, compile; mixed: compile, bf16;
  cpu-only, cpu-dispatch-bound: compile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from autoprof.record.whatif.fixes import FIXES

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
}
ALWAYS = ("inference-mode", "channels-last")


def signals(summary: dict[str, Any]) -> list[str]:
    """What the run says, most specific first: opportunity causes, then verdict, diagnostics."""
    found: list[str] = []
    for opp in summary.get("opportunities") or []:
        if isinstance(opp, dict) and opp.get("cause"):
            found.append(str(opp["cause"]))
    if summary.get("verdict"):
        found.append(str(summary["verdict"]))
    for diag in summary.get("diagnostics") or []:
        if isinstance(diag, dict) and diag.get("id"):
            found.append(str(diag["id"]))
    return found


def cuda_run(summary: dict[str, Any]) -> bool:
    """Whether the run did CUDA work: its summary's ``is_cuda`` when it has one, else whether
    this process has a CUDA device."""
    if isinstance(summary.get("is_cuda"), bool):
        return bool(summary["is_cuda"])
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _offered(name: str, summary: dict[str, Any]) -> bool:
    """CUDA-only fixes (cuda-graph, compile-reduce-overhead) are never suggested on CPU runs."""
    return not FIXES[name].cuda_only or cuda_run(summary)


def suggested(summary: dict[str, Any]) -> list[str]:
    """Fix names for a run's summary, each once, in the order the signals name them."""
    names = [*(n for s in signals(summary) for n in SUGGESTED.get(s, ())), *ALWAYS]
    return _unique(n for n in names if _offered(n, summary))


def suggested_by(name: str, summary: dict[str, Any]) -> list[str]:
    """The run's signals (opportunity causes, verdict, diagnostic ids) that name fix ``name``
    (none for a CUDA-only fix on a CPU run)."""
    if name in FIXES and not _offered(name, summary):
        return []
    return _unique(s for s in signals(summary) if name in SUGGESTED.get(s, ()))


ACCEPTED = "'auto', 'all', a fix name or a list/tuple of fix names"


def resolve(try_fixes: object, summary: dict[str, Any] | None = None) -> list[str]:
    """``"auto"``, ``"all"``, one fix name or a sequence of names, as a checked list; anything
    else is a ValueError naming the accepted values."""
    if isinstance(try_fixes, str):
        if try_fixes == "auto":
            return suggested(summary or {})
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


def predicted_for(name: str, summary: dict[str, Any]) -> float | None:
    """The analysis's replayed prediction for fix ``name``: ``predicted_speedup`` of the first
    opportunity whose ``fix`` (or ``fixes`` list) names it; None when the summary has none."""
    opp = _opportunity_for(name, summary)
    return None if opp is None else float(opp["predicted_speedup"])


def interval_for(name: str, summary: dict[str, Any]) -> tuple[float, float] | None:
    """The interval (low, high) that opportunity states a measured gain is expected in
    (``predicted_interval``); None when it states none."""
    opp = _opportunity_for(name, summary)
    band = None if opp is None else opp.get("predicted_interval")
    if not isinstance(band, dict):
        return None
    low, high = band.get("low"), band.get("high")
    if (isinstance(low, int | float) and isinstance(high, int | float)
            and not isinstance(low, bool) and not isinstance(high, bool)):
        return float(low), float(high)
    return None


def _opportunity_for(name: str, summary: dict[str, Any]) -> dict[str, Any] | None:
    for opp in summary.get("opportunities") or []:
        if not isinstance(opp, dict):
            continue
        fixes = opp.get("fixes")
        named: list[Any] = fixes if isinstance(fixes, list) else [opp.get("fix")]
        value = opp.get("predicted_speedup")
        if name in named and isinstance(value, int | float) and not isinstance(value, bool):
            return opp
    return None
