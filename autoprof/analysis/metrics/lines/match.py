"""Match the source-lines step's ops to the measured steps' ops by order and name.

The lines step runs the same function as the measured steps, so each thread issues the same
ops in the same order; each measured step's ``cpu_op`` rows of a thread (time order) are
aligned with the lines step's ops of the same thread id (the same process, so the same
thread) by their names: equal sequences pair one to one, others through difflib's longest
matching blocks (an op only one of them has stays unattributed). Each matched row takes the
lines op's ``source`` and ``module``; GPU work takes those of the op that launched it.

An op left without a pair inside a compiled region (a ``Torch-Compiled Region`` op, the
frame dynamo runs compiled code in) whose region op has a line takes the line of its
innermost such region: the line that called the compiled module or function.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.metrics.lines.graphs import graph_launches, kernel_lines, launched_by
from autoprof.analysis.metrics.lines.trace import (
    GRAPH_LAUNCHES,
    LinesOp,
    LinesTrace,
    find_lines_files,
    read_lines_file,
)
from autoprof.analysis.metrics.stats import require_columns
from autoprof.analysis.metrics.sync import autoprof_mask

_NEEDS = ("name", "cat", "tid", "step", "ts_us", "self_us", "rank", "op_row")
COMPILED_REGION = "Torch-Compiled Region"
_MAX_DEPTH = 512  # parents walked up from an op (a malformed chain ends there)


@dataclass(frozen=True)
class Attribution:
    """``rows``: one row per attributed events-table row (its index), columns ``source``
    (``path:line (function)``), ``module`` and ``library`` (trace.library_frame; "" when
    none); ``match_pct``: the share of
    the measured steps' op self time attributed to a line; ``has_lines``: a lines trace was
    found."""

    rows: pd.DataFrame
    match_pct: float
    has_lines: bool


EMPTY = pd.DataFrame({"source": pd.Series(dtype=str), "module": pd.Series(dtype=str),
                      "library": pd.Series(dtype=str)})


def _pairs(lines_names: list[str], step_names: list[str]) -> list[tuple[int, int]]:
    """(lines position, step position) of ops matched by order and name."""
    if lines_names == step_names:
        return [(i, i) for i in range(len(step_names))]
    matcher = difflib.SequenceMatcher(None, lines_names, step_names, autojunk=False)
    return [(a + k, b + k) for a, b, size in matcher.get_matching_blocks() for k in range(size)]


def user_ops(events: pd.DataFrame) -> pd.DataFrame:
    """The measured steps' cpu_op rows that are the user's (not under an autoprof label)."""
    require_columns(events, _NEEDS, "source lines")
    keep = (events["cat"] == "cpu_op").to_numpy() & (events["step"] >= 0).to_numpy()
    keep &= ~autoprof_mask(events)
    return events[keep]


def _attribute_rank(ops: pd.DataFrame, lines: list[LinesOp],
                    library: dict[int, str] | None = None) -> dict[int, tuple[str, str]]:
    by_tid: dict[int, list[LinesOp]] = {}
    for op in lines:
        by_tid.setdefault(op.tid, []).append(op)
    found: dict[int, tuple[str, str]] = {}
    ordered = ops.sort_values(["step", "tid", "ts_us"], kind="stable")
    for (_, tid), group in ordered.groupby(["step", "tid"], sort=False, observed=True):
        mine = by_tid.get(int(tid), [])
        if not mine:
            continue
        index = group.index.to_numpy()
        for a, b in _pairs([op.name for op in mine], group["name"].astype(str).tolist()):
            if mine[a].source or mine[a].module:
                found[int(index[b])] = (mine[a].source, mine[a].module)
            if mine[a].library and library is not None:
                library[int(index[b])] = mine[a].library
    return found


def _enclosing(label: int, parent_of: dict[int, int], wanted: set[int]) -> int:
    """The innermost ancestor of ``label`` in ``wanted`` (by ``parent``), or -1."""
    at = parent_of.get(label, -1)
    for _ in range(_MAX_DEPTH):
        if at is None or not at >= 0 or at in wanted:
            break
        at = parent_of.get(at, -1)
    return int(at) if at is not None and at in wanted else -1


def _in_regions(events: pd.DataFrame, ops: pd.DataFrame,
                found: dict[int, tuple[str, str]]) -> dict[int, tuple[str, str]]:
    """The user ops without a line whose innermost enclosing compiled region with a line
    (by ``parent``: the same thread, inside its time) gives them that line."""
    if "parent" not in events.columns or not found:
        return {}
    labels = pd.Index(list(found))
    names = events["name"].reindex(labels).astype(str)
    regions = set(labels[names.str.startswith(COMPILED_REGION).to_numpy(dtype=bool)].tolist())
    left = ops.index[~ops.index.isin(labels)].tolist()
    if not regions or not left:
        return {}
    parent_of = dict(zip(events.index.tolist(), events["parent"].tolist(), strict=True))
    inherited: dict[int, tuple[str, str]] = {}
    for label in left:
        region = _enclosing(int(label), parent_of, regions)
        if region >= 0:
            inherited[int(label)] = found[region]
    return inherited


def attribute(events: pd.DataFrame, lines_by_rank: dict[int, list[LinesOp]],
              kernels: dict[str, dict[str, list[str]]] | None = None) -> Attribution:
    """Each user op row of ``events`` (and the GPU work it launched) with its line; CUDA-graph
    launches and their kernels, and compiled graphs' kernels with inductor's provenance
    (``kernels``: graph key -> kernel -> lines), through :mod:`.graphs`."""
    if not lines_by_rank and not any(kernels.values() if kernels else ()):
        require_columns(events, _NEEDS, "source lines")
        return Attribution(EMPTY, 0.0, False)  # no lines: nothing to match, no op copied
    ops = user_ops(events)
    found: dict[int, tuple[str, str]] = {}
    launches: dict[int, tuple[str, str]] = {}
    library: dict[int, str] = {}
    for rank, lines in lines_by_rank.items():
        plain = [op for op in lines if op.name not in GRAPH_LAUNCHES]
        found.update(_attribute_rank(ops[ops["rank"] == rank], plain, library))
        launches.update(graph_launches(events, lines, rank))
    found.update(_in_regions(events, ops, found))
    compiled = kernel_lines(events, kernels or {})
    if not found and not launches and not compiled:
        return Attribution(EMPTY, 0.0, bool(lines_by_rank))
    rows = pd.DataFrame.from_dict(found, orient="index", columns=["source", "module"])
    op_row = events["op_row"].to_numpy()
    gpu = np.flatnonzero(np.isin(op_row, rows.index.to_numpy()))
    if len(gpu):
        launched = rows.loc[op_row[gpu]].set_axis(events.index[gpu])
        rows = pd.concat([rows, launched[~launched.index.isin(rows.index)]])
    extra = {**launches, **launched_by(events, launches)} if launches else {}
    extra = {k: v for k, v in extra.items() if k not in rows.index}
    rows = pd.concat([rows, pd.DataFrame.from_dict(extra, orient="index",
                                                   columns=["source", "module"])])
    for label, (source, _) in compiled.items():  # inductor's provenance: finer than a call
        module = str(rows.at[label, "module"]) if label in rows.index else ""
        rows.loc[label, ["source", "module"]] = [source, module]
    rows["library"] = _library_column(rows.index, library, op_row, events.index)
    total = float(ops["self_us"].sum())
    sourced = rows.index[rows["source"] != ""]
    done = float(ops["self_us"].reindex(sourced).sum())
    return Attribution(rows.sort_index(), 100.0 * done / total if total > 0 else 0.0, True)


def _library_column(labels: pd.Index, library: dict[int, str], op_row: np.ndarray,
                    index: pd.Index) -> np.ndarray:
    """Each attributed row's library frame (trace.library_frame; "" when none): an op's own,
    GPU work the frame of the op that launched it."""
    if not library:
        return np.full(len(labels), "", dtype=object)
    own = pd.Series(library, dtype=object)
    launcher = pd.Series(op_row, index=index).reindex(labels)
    via = launcher.map(own)
    return np.asarray(own.reindex(labels).fillna(via).fillna("").to_numpy(), dtype=object)


def attribute_run(run_dir: Path | None, events: pd.DataFrame) -> Attribution:
    """:func:`attribute` with the lines traces of the run folder ``run_dir`` (none: empty)."""
    refused: list[str] = []
    files = find_lines_files(run_dir, refused) if run_dir is not None else {}
    traces: dict[int, LinesTrace] = {}
    for rank, path in files.items():
        try:
            traces[rank] = read_lines_file(path, run_dir)
        except TraceError as err:
            refused.append(str(err))
    for problem in refused:  # the trace analysis does not depend on the lines
        warnings.warn(f"{problem} (source lines ignored)", stacklevel=2)
    kernels = {key: graph for trace in traces.values() for key, graph in trace.kernels.items()}
    return attribute(events, {rank: trace.ops for rank, trace in traces.items()}, kernels)
