"""Benchmark traces: synthetic Kineto traces of a given size, generated once, reused after.

The generator is the project's own (``autoprof.analysis._synthetic.write_synthetic_trace``),
so the loader's tests and these benchmarks read the same shape of trace. Each size gets its
own folder (HTA's ``TraceAnalysis`` takes a folder): ``<root>/n<events>/trace.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent
_SEED = 0


def trace_path(root: Path, n_events: int) -> Path:
    """Where the trace of ``n_events`` events lives under ``root``."""
    return root / f"n{n_events}" / "trace.json"


def ensure_trace(root: Path, n_events: int) -> Path:
    """Write the synthetic trace of ``n_events`` events unless it is already there."""
    path = trace_path(root, n_events)
    if path.exists() and path.stat().st_size > 0:
        return path
    if str(_REPO) not in sys.path:
        sys.path.insert(0, str(_REPO))
    from autoprof.analysis._synthetic import write_synthetic_trace

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    write_synthetic_trace(tmp, n_events, seed=_SEED)
    tmp.replace(path)
    return path
