"""One run's source lines: the attribution and the tables built from it, each computed once,
and the helpers that add a line to the summary's op rows and opportunities' ``where``."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from autoprof.analysis.metrics.lines.library import library_times
from autoprof.analysis.metrics.lines.match import Attribution, attribute_run
from autoprof.analysis.metrics.lines.table import line_times, op_lines
from autoprof.analysis.metrics.lines.trace import lines_folder


class SourceLines:
    """The source lines of one run (``Analysis.source_lines``). ``available``: the run folder
    holds a lines trace and at least one op matched."""

    def __init__(self, path: str | Path | None, events: pd.DataFrame) -> None:
        self._folder = lines_folder(path)  # a trace file inside a run folder: its folder
        self._events = events

    @cached_property
    def attribution(self) -> Attribution:
        return attribute_run(self._folder, self._events)

    @property
    def available(self) -> bool:
        return not self.attribution.rows.empty

    @cached_property
    def by_line(self) -> pd.DataFrame:
        """metrics.lines.table.line_times: one row per line, heaviest first."""
        return line_times(self._events, self.attribution)

    @cached_property
    def by_library(self) -> pd.DataFrame:
        """metrics.lines.library.library_times: each line's time by library frame."""
        return library_times(self._events, self.attribution)

    @cached_property
    def by_op(self) -> pd.DataFrame:
        """metrics.lines.table.op_lines: each op's heaviest line, indexed by op name."""
        return op_lines(self._events, self.attribution).set_index("name")

    def of_op(self, name: str) -> dict[str, Any]:
        """``{"source", "module"}`` of an op's heaviest line ({} when it has none); the
        module only where a module call encloses it."""
        if not self.available or name not in self.by_op.index:
            return {}
        row = self.by_op.loc[name]
        out: dict[str, Any] = {"source": str(row["source"])}
        if row["module"]:
            out["module"] = str(row["module"])
        return out


def with_op_lines(rows: list[dict[str, Any]], lines: SourceLines) -> list[dict[str, Any]]:
    """Rows naming an op (``name``) with its ``source`` and ``module`` added (new keys only,
    and only where the op has a line)."""
    return [{**row, **lines.of_op(str(row.get("name", "")))} for row in rows]


def with_where_lines(opportunities: list[dict[str, Any]], lines: SourceLines
                     ) -> list[dict[str, Any]]:
    """Each opportunity's ``where`` entries with the line of the op they name."""
    if not lines.available:
        return opportunities
    return [{**o, "where": with_op_lines(list(o.get("where") or []), lines)}
            for o in opportunities]


def with_top_ops_lines(top: dict[str, list[dict[str, Any]]], lines: SourceLines
                       ) -> dict[str, list[dict[str, Any]]]:
    """The summary's ``top_ops`` with each op's and kernel's heaviest line."""
    if not lines.available:
        return top
    return {key: with_op_lines(rows, lines) for key, rows in top.items()}


def file_lines(lines: SourceLines, path: str) -> pd.DataFrame:
    """The lines of one file that have ops, in line order (the Source view's numbers)."""
    table = lines.by_line
    if table.empty:
        return table
    return table[table["path"] == path].sort_values("line", kind="stable").reset_index(drop=True)


def files_by_time(lines: SourceLines) -> list[str]:
    """The files with lines, the one whose lines take the most time per step first."""
    table = lines.by_line
    if table.empty:
        return []
    total = table["self_cpu_us"] + table["gpu_us"] + table["sync_us"]
    sums = total.groupby(table["path"]).sum().sort_values(ascending=False, kind="stable")
    return [str(p) for p in sums.index]


def ops_with_lines(ops: pd.DataFrame, lines: SourceLines) -> pd.DataFrame:
    """An ops table (one row per op name) with each op's heaviest ``source`` line and
    ``module``; unchanged when the run has no lines."""
    if not lines.available or "name" not in ops.columns:
        return ops
    by_op = lines.by_op
    names = ops["name"].astype(str)
    return ops.assign(source=names.map(by_op["source"]).fillna("").to_numpy(),
                      module=names.map(by_op["module"]).fillna("").to_numpy())


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON-able value (dict values, list items), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def with_diagnostic_lines(diagnostics: list[dict[str, Any]], lines: SourceLines
                          ) -> list[dict[str, Any]]:
    """Each diagnostic whose evidence names ops with a line gains ``evidence.sources``
    (op name -> ``path:line (function)``); the others are unchanged."""
    if not lines.available:
        return diagnostics
    out = []
    for d in diagnostics:
        evidence = d.get("evidence")
        named = {s: lines.of_op(s)["source"] for s in _strings(evidence) if lines.of_op(s)}
        if isinstance(evidence, dict) and named:
            d = {**d, "evidence": {**evidence, "sources": named}}
        out.append(d)
    return out
