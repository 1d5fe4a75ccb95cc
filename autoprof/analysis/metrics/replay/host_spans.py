"""The host spans a change to a replay plan acts on: the rows named so (or the profiler's
steps), the fetches a CUDA graph cannot replace, the span arithmetic between them."""

from __future__ import annotations

import numpy as np

from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.simulate import Plan
from autoprof.analysis.metrics.replay.waits import END, START
from autoprof.analysis.metrics.stats import Coverage, factorized, isin_mask


def under(g: Graph, row: int, name: str, names: np.ndarray) -> bool:
    """Whether the row or a row above it is named `name`."""
    while row >= 0:
        if names[row] == name:
            return True
        row = int(g.row_parent[row])
    return False


def host_spans(g: Graph, name: str | None) -> Coverage:
    """The spans of the host rows named `name` (None: the profiler steps), on any thread: a
    capture or a call holds the work other threads (autograd's) do meanwhile. Found once per
    graph and name (a Coverage is never changed: every change of every replay reads it)."""
    key = f"host_spans|{name}" if name is not None else "host_spans"
    kept = g.kept.get(key)
    if not isinstance(kept, Coverage):
        kept = g.kept[key] = _host_spans(g, name)
    return kept


def _host_spans(g: Graph, name: str | None) -> Coverage:
    if name is None:
        return Coverage(g.call_ts_us[g.call_kind == START], g.call_ts_us[g.call_kind == END])
    hit = isin_mask(g.events["lane"], ("cpu",)) & (g.names() == name)
    if not hit.any():
        raise ValueError(f"replay: no host row named {name!r} in the events table")
    return Coverage(g.events["ts_us"].to_numpy(float)[hit],
                    g.events["end_us"].to_numpy(float)[hit])


def minus(a: Coverage, b: Coverage) -> Coverage:
    """The parts of `a`'s spans outside `b`'s."""
    starts: list[float] = []
    ends: list[float] = []
    for lo, hi in zip(a.s.tolist(), a.e.tolist(), strict=True):
        k = int(np.searchsorted(b.e, lo, "right"))
        at = lo
        while k < len(b.s) and b.s[k] < hi:
            if b.s[k] > at:
                starts.append(at)
                ends.append(float(b.s[k]))
            at = max(at, float(b.e[k]))
            k += 1
        if at < hi:
            starts.append(at)
            ends.append(hi)
    return Coverage(np.asarray(starts, float), np.asarray(ends, float))


def pace_spans(g: Graph, plan: Plan) -> Coverage | None:
    """The spans of the region whose host pace the plan keeps apart (`ScaleHost` with a
    region); None when the plan has one pace."""
    return host_spans(g, plan.pace_region) if plan.pace_region is not None else None


def not_capturable(g: Graph) -> Coverage:
    """The host spans a CUDA graph cannot replace: the DataLoader's fetches (their CPU work
    runs whether the GPU work is captured or not); found once per graph."""
    kept = g.kept.get("not_capturable")
    if isinstance(kept, Coverage):
        return kept
    names, texts = factorized(g.events["name"])  # each distinct name matched once
    named = np.fromiter((bool(DATA_LOADER_NAME.search(str(n))) for n in texts), bool,
                        len(texts))
    hit = named[names]
    kept = g.kept["not_capturable"] = Coverage(g.events["ts_us"].to_numpy(float)[hit],
                                               g.events["end_us"].to_numpy(float)[hit])
    return kept
