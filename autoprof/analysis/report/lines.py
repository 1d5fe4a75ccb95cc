"""``autoprof lines RUN``: the top source lines of a run by time, and the summary's
``source_lines`` key (present only when the run folder holds a source-lines trace).

Each line's numbers are means per measured step (metrics/lines/table.py): ``self_cpu_us``
(host time inside the line's ops), ``gpu_us`` (GPU work they launched), ``sync_us`` /
``syncs`` (host syncs inside them). A line that calls into a library (``model.generate()``,
``trainer.train()``) also names, under ``library``, the library frames nearest its ops
(metrics/lines/library.py), heaviest first: where inside the library its time goes.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from autoprof.analysis.metrics.lines import SourceLines
from autoprof.analysis.metrics.lines.library import frames_of
from autoprof.units import fmt_us, safe_strings, safe_text

TOP_LINES = 20
_NUMBERS = ("self_cpu_us", "gpu_us", "sync_us", "syncs", "calls")


def short_path(path: str, cwd: str | None = None) -> str:
    """``path`` relative to the working folder when it is under it (what a user reads)."""
    here = os.path.join(cwd or os.getcwd(), "")
    return path[len(here):] if path.startswith(here) else path


def short_source(source: str) -> str:
    return short_path(source)


def line_rows(lines: SourceLines, n: int = TOP_LINES) -> list[dict[str, Any]]:
    """The ``n`` heaviest lines as JSON-able rows."""
    table: pd.DataFrame = lines.by_line.head(n)
    rows = []
    for r in table.to_dict(orient="records"):
        row: dict[str, Any] = {"source": str(r["source"]), "path": str(r["path"]),
                               "line": int(r["line"]), "function": str(r["function"]),
                               "module": str(r["module"]), "top_op": str(r["top_op"])}
        row.update({k: float(r[k]) for k in _NUMBERS})
        row["library"] = frames_of(lines.by_library, row["source"])
        rows.append(row)
    return rows


def lines_summary(lines: SourceLines) -> dict[str, Any]:
    """``{"source_lines": {match_pct, lines}}`` when the run has lines, else {} (a run
    without them keeps the summary it had)."""
    if not lines.available:
        return {}
    return {"source_lines": {"match_pct": lines.attribution.match_pct,
                             "lines": line_rows(lines)}}


def render_lines(lines: SourceLines, name: str, n: int = TOP_LINES) -> str:
    """The text ``autoprof lines RUN`` prints: every name through units.safe_text, as the
    summary's and the diff's (a label from a trace never moves the cursor or retitles the
    terminal)."""
    name = safe_text(name)
    if not lines.attribution.has_lines:
        return (f"autoprof lines: {name}: no source-lines trace in this run folder (recorded "
                "with source_lines=False, before autoprof recorded lines, or not a run folder)")
    if not lines.available:
        return f"autoprof lines: {name}: the source-lines step's ops matched none of the steps'"
    out = [f"autoprof lines: {name}",
           f"  {lines.attribution.match_pct:.1f}% of the steps' op self time has a line; "
           "times are per step",
           "",
           f"  {'self CPU':>10} {'GPU work':>10} {'syncs':>10} {'calls':>6}  line"]
    for r in safe_strings(line_rows(lines, n)):
        sync = f"{fmt_us(r['sync_us'])}" if r["syncs"] else "-"
        module = f"  [{r['module']}]" if r["module"] else ""
        out.append(f"  {fmt_us(r['self_cpu_us']):>10} {fmt_us(r['gpu_us']):>10} {sync:>10} "
                   f"{r['calls']:>6.0f}  {short_source(r['source'])}  {r['top_op']}{module}")
        out += [f"  {fmt_us(f['self_cpu_us']):>10} {fmt_us(f['gpu_us']):>10} {'':>10} "
                f"{'':>6}    in the library: {f['frame']}" for f in r["library"]]
    return "\n".join(out)


def at_line(source: object, module: object = None) -> str:
    """`` at train.py:42 (step) [Model.blocks.0]`` for a row with a ``source``, else ""."""
    if not source:
        return ""
    return f" at {short_source(str(source))}" + (f" [{module}]" if module else "")


def evidence_sources(evidence: object) -> dict[str, str]:
    """A finding's ``evidence.sources`` (op -> line; {} when it names no op with one)."""
    sources = evidence.get("sources") if isinstance(evidence, dict) else None
    return {str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {}


def diagnostic_sources(diagnostic: dict[str, Any]) -> dict[str, str]:
    """A diagnostic's ``evidence.sources`` (op -> line; {} when it names no op with one)."""
    return evidence_sources(diagnostic.get("evidence"))
