"""Lines for the work of compiled graphs and CUDA graphs (docs/lines.md, "torch.compile"
and "CUDA graphs").

- A CUDA-graph replay is one ``cudaGraphLaunch`` that no op encloses; the lines step labels
  it with the line that called ``graph.replay()`` (``autoprof.record.lines_graphs``). Each
  measured step's launches of a thread pair with the lines step's of the same thread by
  order; the replayed kernels (``launch_row``) take their launch's line.
- A kernel inductor generated (``triton_poi_fused_gelu_0``; on CPU
  ``graph_0_cpp_fused_gelu_0``, in the trace only with inductor's kernel profiling) takes
  the line of the source its provenance names (the first of its user lines: a fused kernel
  may come from several), looked up in
  the graph whose ``## Call CompiledFxGraph <key> ##`` encloses its launch (or, outside
  one, in the only graph with a kernel of that name).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.lines.trace import GRAPH_LAUNCHES, LinesOp

CALL_GRAPH = "## Call CompiledFxGraph "
_GRAPH_PREFIX = r"^graph_\d+_"
Found = dict[int, tuple[str, str]]  # events row -> (source, module)


def graph_launches(events: pd.DataFrame, lines: list[LinesOp], rank: int) -> Found:
    """The measured steps' CUDA-graph launches of ``rank``, paired by order per thread with
    the lines step's labelled ones."""
    mine: dict[int, list[LinesOp]] = {}
    for op in lines:
        if op.name in GRAPH_LAUNCHES and op.source:
            mine.setdefault(op.tid, []).append(op)
    if not mine:
        return {}
    keep = (events["name"].isin(list(GRAPH_LAUNCHES)).to_numpy()
            & (events["step"] >= 0).to_numpy() & (events["rank"] == rank).to_numpy())
    launches = events[keep].sort_values(["step", "tid", "ts_us"], kind="stable")
    found: Found = {}
    for (_, tid), group in launches.groupby(["step", "tid"], sort=False, observed=True):
        for row, op in zip(group.index, mine.get(int(tid), []), strict=False):
            found[int(row)] = (op.source, op.module)
    return found


def launched_by(events: pd.DataFrame, found: Found) -> Found:
    """GPU work whose launch (``launch_row``) has a line, with that line."""
    launch = events["launch_row"].to_numpy()
    rows = np.flatnonzero(np.isin(launch, np.fromiter(found, dtype=np.int64, count=len(found)))
                          & events["is_gpu_work"].to_numpy(dtype=bool))
    return {int(events.index[i]): found[int(launch[i])] for i in rows}


def _graph_key(events: pd.DataFrame, start: int, position: dict[int, int]) -> str | None:
    """The key of the ``## Call CompiledFxGraph`` enclosing row ``start`` (its parents)."""
    names = events["name"]
    parent = events["parent"].to_numpy()
    at = start
    while at >= 0 and at in position:
        name = str(names.iat[position[at]])
        if name.startswith(CALL_GRAPH):
            return name[len(CALL_GRAPH):].removesuffix(" ##").strip()
        at = int(parent[position[at]])
    return None


def kernel_lines(events: pd.DataFrame, kernels: dict[str, dict[str, list[str]]]) -> Found:
    """Each measured row that is a kernel of a compiled graph with provenance, with the
    first user line inductor kept for it."""
    names = {k for graph in kernels.values() for k in graph}
    if not names:
        return {}
    # a profiled C++ kernel is named graph_<n>_cpp_fused_...: the kernel's name after it
    bare = events["name"].astype(str).str.replace(_GRAPH_PREFIX, "", regex=True)
    keep = bare.isin(list(names)).to_numpy() & (events["step"] >= 0).to_numpy()
    rows = events[keep].assign(name=bare[keep])
    if rows.empty:
        return {}
    position = {int(label): i for i, label in enumerate(events.index)}
    owners: dict[str, list[str]] = {}
    for key, graph in kernels.items():
        for name in graph:
            owners.setdefault(name, []).append(key)
    launch = rows["launch_row"].to_numpy()
    found: Found = {}
    for label, name, via in zip(rows.index, rows["name"].astype(str), launch, strict=True):
        enclosing = _graph_key(events, int(via) if via >= 0 else int(label), position)
        graph = kernels.get(enclosing or "") or (kernels[owners[name][0]]
                                           if len(owners[name]) == 1 else {})
        if graph.get(name):
            found[int(label)] = (graph[name][0], "")
    return found
