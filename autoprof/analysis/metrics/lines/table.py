"""Time per source line: what the ops called from each line cost per measured step.

- ``self_cpu_us``: the self time of the line's ops on the host; ``calls``: its outermost
  ops (those no other op of the same line encloses).
- ``gpu_us``: the GPU work (kernels, copies, sets) those ops launched.
- ``sync_us`` / ``syncs``: the host syncs (``metrics.sync.host_syncs``) inside them.

Each is a mean per measured step (the sum over the steps with ops, divided by their
number). ``op_lines`` names each op's heaviest line (by self time) for the ops table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.lines.match import Attribution, user_ops
from autoprof.analysis.metrics.sync import host_syncs

LINE_COLUMNS = ("source", "module", "self_cpu_us", "gpu_us", "sync_us", "syncs", "calls",
                "top_op", "path", "line", "function")


def split_source(source: str) -> tuple[str, int, str]:
    """``/a/b.py:42 (step)`` -> (``/a/b.py``, 42, ``step``); (source, -1, "") if unparsable."""
    where, _, func = source.partition(" (")
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        return source, -1, ""
    return path, int(line), func.removesuffix(")")


def _sync_rows(events: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Host syncs whose nearest attributed ancestor (or themselves) has a line."""
    syncs = host_syncs(events)
    parent = events["parent"].to_numpy()
    position = {label: i for i, label in enumerate(events.index)}
    known = set(rows.index)
    out: list[tuple[int, int, float]] = []
    for label, dur in zip(syncs.index, syncs["dur_us"].to_numpy(), strict=True):
        at = int(label)
        while at >= 0 and at not in known:
            at = int(parent[position[at]]) if at in position else -1
        if at >= 0:
            out.append((int(label), at, float(dur)))
    return pd.DataFrame(out, columns=["row", "owner", "dur_us"])


def line_times(events: pd.DataFrame, attribution: Attribution) -> pd.DataFrame:
    """One row per source line, heaviest first (columns :data:`LINE_COLUMNS`)."""
    rows = attribution.rows[attribution.rows["source"] != ""]
    if rows.empty:
        return pd.DataFrame(columns=list(LINE_COLUMNS))
    ops = user_ops(events)
    steps = max(1, int(ops["step"].nunique()))
    joined = events.loc[rows.index, ["name", "cat", "self_us", "dur_us", "is_gpu_work"]]
    joined = joined.join(rows)
    is_op = (joined["cat"] == "cpu_op").to_numpy() & joined.index.isin(ops.index)
    cpu = joined[is_op]
    cpu = cpu.assign(outer=_outermost(events, cpu))
    gpu = joined[joined["is_gpu_work"].to_numpy(dtype=bool)]
    table = cpu.groupby("source").agg(self_cpu_us=("self_us", "sum"), calls=("outer", "sum"),
                                      top_op=("name", _heaviest_placeholder))
    table["module"] = _modules_by(cpu, ["source"]).reindex(table.index).fillna("")
    table["top_op"] = _top_ops(cpu)
    table["gpu_us"] = gpu.groupby("source")["dur_us"].sum().reindex(table.index).fillna(0.0)
    syncs = _sync_rows(events, rows)
    if len(syncs):
        syncs["source"] = rows.loc[syncs["owner"], "source"].to_numpy()
        by = syncs.groupby("source")["dur_us"]
        table["sync_us"], table["syncs"] = by.sum(), by.size()
    for column in ("sync_us", "syncs"):
        table[column] = table.get(column, pd.Series(dtype=float)).reindex(table.index).fillna(0)
    for column in ("self_cpu_us", "gpu_us", "sync_us", "syncs", "calls"):
        table[column] = table[column].astype(float) / steps
    parts = [split_source(s) for s in table.index]
    table["path"] = [p for p, _, _ in parts]
    table["line"] = np.array([n for _, n, _ in parts], dtype=np.int64)
    table["function"] = [f for _, _, f in parts]
    table = table.reset_index()
    order = table["self_cpu_us"] + table["gpu_us"] + table["sync_us"]
    return table.loc[order.sort_values(ascending=False, kind="stable").index,
                     list(LINE_COLUMNS)].reset_index(drop=True)


def _outermost(events: pd.DataFrame, cpu: pd.DataFrame) -> np.ndarray:
    """Which of a line's op rows no other op of the same line encloses (its calls)."""
    parent = events.loc[cpu.index, "parent"].to_numpy()
    source = cpu["source"]
    parent_source = source.reindex(parent).to_numpy()
    return np.asarray(parent_source != source.to_numpy(), dtype=bool)


def _heaviest_placeholder(values: pd.Series) -> str:
    return ""


def common_module(values: pd.Series) -> str:
    """The module path all of ``values`` share (``m.h.0``, ``m.h.1`` -> ``m.h``; "" when
    none)."""
    paths = [str(v).split(".") for v in values.unique() if v]
    if not paths:
        return ""
    shared = paths[0]
    for parts in paths[1:]:
        n = 0
        while n < min(len(shared), len(parts)) and shared[n] == parts[n]:
            n += 1
        shared = shared[:n]
    return ".".join(shared)


def _pattern(paths: list[str]) -> str:
    """``m.h.*.attn`` when the paths differ only in list indices (``m.h.0.attn``,
    ``m.h.1.attn``); "" otherwise."""
    split = [p.split(".") for p in paths]
    if len({len(parts) for parts in split}) != 1:
        return ""
    out = []
    for column in zip(*split, strict=True):
        if len(set(column)) == 1:
            out.append(column[0])
        elif all(part.isdigit() for part in column):
            out.append("*")
        else:
            return ""
    return ".".join(out)


def module_label(modules: pd.Series, weights: pd.Series) -> str:
    """One name for the modules an op's (or a line's) rows ran in, weighted by ``weights``
    (their self time): the module itself when there is one; else the shape they share (the
    path with ``*`` for the layer index, or their common path) and how many, naming the
    heaviest: ``m.h.*.attn (in 12 modules, most in m.h.3.attn: 9%)``, or ``in 3 modules,
    most in X: 60%`` when they share no path; "" when no row ran in a module."""
    named = modules.astype(str) != ""
    if not named.any():
        return ""
    totals = weights[named].astype(float).clip(lower=0).groupby(
        modules[named].astype(str)).sum().sort_index(kind="stable")
    if len(totals) == 1:
        return str(totals.index[0])
    heaviest = str(totals.sort_values(ascending=False, kind="stable").index[0])
    total = float(totals.sum())
    share = f": {100.0 * float(totals[heaviest]) / total:.0f}%" if total > 0 else ""
    many = f"in {len(totals)} modules, most in {heaviest}{share}"
    shape = _pattern(list(totals.index)) or common_module(pd.Series(list(totals.index)))
    return f"{shape} ({many})" if shape else many


def _modules_by(rows: pd.DataFrame, keys: list[str]) -> pd.Series:
    """``module_label`` of each group of ``rows`` (by ``keys``; weights: ``self_us``)."""
    labels = {key: module_label(group["module"], group["self_us"])
              for key, group in rows.groupby(keys if len(keys) > 1 else keys[0], sort=False)}
    if len(keys) == 1:
        return pd.Series(labels, dtype=object)
    return pd.Series(list(labels.values()), index=pd.MultiIndex.from_tuples(list(labels)),
                     dtype=object)


def _top_ops(cpu: pd.DataFrame) -> pd.Series:
    """Per source, the op name with the most self time."""
    sums = cpu.groupby(["source", "name"], observed=True)["self_us"].sum().reset_index()
    best = sums.sort_values("self_us", ascending=False, kind="stable").drop_duplicates("source")
    return best.set_index("source")["name"].astype(str)


def op_lines(events: pd.DataFrame, attribution: Attribution) -> pd.DataFrame:
    """Per op name (CPU ops and GPU work, whose self time is their duration): its heaviest
    ``source`` and that line's ``module`` and share of the op's attributed self time
    (``line_pct``)."""
    rows = attribution.rows[attribution.rows["source"] != ""]
    gpu = events.index[events["is_gpu_work"].to_numpy(dtype=bool)]
    keep = rows.index.intersection(user_ops(events).index.union(gpu))
    cpu = events.loc[keep, ["name", "self_us"]].join(rows)
    if cpu.empty:
        return pd.DataFrame(columns=["name", "source", "module", "line_pct"])
    cpu["name"] = cpu["name"].astype(str)
    sums = cpu.groupby(["name", "source"])["self_us"].sum().reset_index()
    totals = sums.groupby("name")["self_us"].transform("sum")
    sums["line_pct"] = np.where(totals > 0, 100.0 * sums["self_us"] / totals, 100.0)
    best = sums.sort_values("self_us", ascending=False, kind="stable").drop_duplicates("name")
    modules = _modules_by(cpu, ["name", "source"])  # of the rows at that line: all layers
    best["module"] = [str(modules.get((n, s), "")) for n, s in zip(best["name"], best["source"],
                                                                   strict=True)]
    return best[["name", "source", "module", "line_pct"]].reset_index(drop=True)
