"""Benchmark traces: synthetic Kineto traces of a given size, generated once, reused after.

The generator is the project's own (``tests/support/synthetic.py``),
so the loader's tests and these benchmarks read the same shape of trace. Each size gets its
own folder (HTA's ``TraceAnalysis`` takes a folder): ``<root>/n<events>/trace.json``.

That generator starts a new ``ProfilerStep#N`` every 20-60 layers (about 1,300 steps at 1M
events). A trace torch.profiler writes holds one schedule cycle: a few active steps, however
many events. ``steps=K`` rewrites the trace to that shape: consecutive step spans are merged
into K ``ProfilerStep`` spans covering the same time, and the other step spans are renamed
``iteration`` (the event count does not change). HTA's ``add_iteration`` loops over every step
for every event, so step count matters to it (quadratic in trace length at ~700 events/step).
"""

from __future__ import annotations

import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent
_SEED = 0


def trace_path(root: Path, n_events: int, steps: int | None = None) -> Path:
    """Where the trace of ``n_events`` events (``steps`` profiler steps) lives under ``root``."""
    return root / (f"n{n_events}" + (f"-steps{steps}" if steps else "")) / "trace.json"


def ensure_trace(root: Path, n_events: int, steps: int | None = None) -> Path:
    """Write the synthetic trace of ``n_events`` events unless it is already there."""
    path = trace_path(root, n_events, steps)
    if path.exists() and path.stat().st_size > 0:
        return path
    if steps:
        source = ensure_trace(root, n_events)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        _merge_steps(source, tmp, steps)
        tmp.replace(path)
        return path
    tests = str(_REPO / "tests")  # the generator lives with the test support code
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from support.synthetic import write_synthetic_trace

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    write_synthetic_trace(tmp, n_events, seed=_SEED)
    tmp.replace(path)
    return path


def _merge_steps(source: Path, target: Path, steps: int) -> None:
    """Copy ``source`` to ``target`` with its step spans merged into ``steps`` spans."""
    import msgspec

    trace = msgspec.json.decode(source.read_bytes())
    events = trace["traceEvents"]
    spans = sorted((e for e in events if e.get("ph") == "X"
                    and str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    if len(spans) > steps:
        per = -(-len(spans) // steps)  # ceil
        for k in range(0, len(spans), per):
            group = spans[k:k + per]
            head = group[0]
            head["name"] = f"ProfilerStep#{k // per}"
            head["dur"] = max(e["ts"] + e["dur"] for e in group) - head["ts"]
            for other in group[1:]:
                other["name"] = "iteration"
    target.write_bytes(msgspec.json.encode(trace))
