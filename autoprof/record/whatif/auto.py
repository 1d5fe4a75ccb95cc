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

from collections.abc import Iterable, Sequence
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


def suggested(summary: dict[str, Any]) -> list[str]:
    """Fix names for a run's summary, each once, in the order the signals name them."""
    return _unique([*(n for s in signals(summary) for n in SUGGESTED.get(s, ())), *ALWAYS])


def suggested_by(name: str, summary: dict[str, Any]) -> list[str]:
    """The run's signals (opportunity causes, verdict, diagnostic ids) that name fix ``name``."""
    return _unique(s for s in signals(summary) if name in SUGGESTED.get(s, ()))


def resolve(try_fixes: str | Sequence[str], summary: dict[str, Any] | None = None) -> list[str]:
    """``"auto"``, ``"all"``, one fix name or a sequence of names, as a checked list."""
    if isinstance(try_fixes, str):
        if try_fixes == "auto":
            return suggested(summary or {})
        if try_fixes == "all":
            return list(FIXES)
        try_fixes = (try_fixes,)
    names = _unique(try_fixes)
    unknown = [n for n in names if n not in FIXES]
    if unknown:
        raise ValueError(f"try_fixes: unknown fix(es) {unknown}; known: {list(FIXES)}, "
                         "or 'auto' / 'all'")
    return names


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))
