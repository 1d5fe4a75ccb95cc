"""autoprof's analysis layer: any torch.profiler trace -> one events table -> explanations.

Never imports torch, streamlit or altair. Every public name is re-exported lazily (PEP 562),
so ``import autoprof.analysis`` is cheap and a module that is not written yet does not break
the others.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autoprof.analysis._decode import TraceFile, read_trace
    from autoprof.analysis._errors import TraceError
    from autoprof.analysis.compare import compare
    from autoprof.analysis.diagnostics import Diagnostic, diagnose
    from autoprof.analysis.events import build_events
    from autoprof.analysis.ops import self_vs_total
    from autoprof.analysis.overhead import Overhead, overhead
    from autoprof.analysis.ranks import rank_table, straggler_rank
    from autoprof.analysis.run import Run, find_runs, load
    from autoprof.analysis.steps import per_step
    from autoprof.analysis.summary import summarize
    from autoprof.analysis.tables import format_table, write_tables
    from autoprof.analysis.verdict import Verdict, verdict

# name -> module that defines it; imported on first attribute access.
_LAZY: dict[str, str] = {
    "TraceError": "autoprof.analysis._errors",
    "TraceFile": "autoprof.analysis._decode",
    "read_trace": "autoprof.analysis._decode",
    "build_events": "autoprof.analysis.events",
    "Run": "autoprof.analysis.run",
    "load": "autoprof.analysis.run",
    "find_runs": "autoprof.analysis.run",
    "self_vs_total": "autoprof.analysis.ops",
    "format_table": "autoprof.analysis.tables",
    "write_tables": "autoprof.analysis.tables",
    "per_step": "autoprof.analysis.steps",
    "overhead": "autoprof.analysis.overhead",
    "Overhead": "autoprof.analysis.overhead",
    "verdict": "autoprof.analysis.verdict",
    "Verdict": "autoprof.analysis.verdict",
    "diagnose": "autoprof.analysis.diagnostics",
    "Diagnostic": "autoprof.analysis.diagnostics",
    "rank_table": "autoprof.analysis.ranks",
    "straggler_rank": "autoprof.analysis.ranks",
    "compare": "autoprof.analysis.compare",
    "summarize": "autoprof.analysis.summary",
}

__all__ = [
    "Diagnostic",
    "Overhead",
    "Run",
    "TraceError",
    "TraceFile",
    "Verdict",
    "build_events",
    "compare",
    "diagnose",
    "find_runs",
    "format_table",
    "load",
    "overhead",
    "per_step",
    "rank_table",
    "read_trace",
    "self_vs_total",
    "straggler_rank",
    "summarize",
    "verdict",
    "write_tables",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'autoprof.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """Keeps ``autoprof.analysis.overhead`` (and ``verdict``, ``compare``) the *function*.

    Importing a submodule makes Python bind it on the package under its short name, which
    would shadow the function of the same name. When that submodule defines the function,
    bind the function instead; the module stays reachable through ``sys.modules``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            isinstance(value, types.ModuleType)
            and _LAZY.get(name) == value.__name__
            and hasattr(value, name)
        ):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
