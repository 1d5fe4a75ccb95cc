"""The runs table from `find_runs`, turned into selectable paths and one-line labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

EXAMPLES = "examples"  # traces/examples: the runs shipped with autoprof
DISPLAY_COLUMNS = ["run", "example", "name", "size", "verdict", "why", "device", "ranks",
                   "status", "started", "error"]
STATUS_MARK = {"complete": "", "failed": "✗ ", "recording": "… ", "partial": "◐ "}


def run_paths(runs: pd.DataFrame | None) -> list[str]:
    if runs is None or not len(runs) or "path" not in runs.columns:
        return []
    return [str(p) for p in runs["path"]]


def _cell(row: pd.Series, col: str) -> str:
    if col not in row.index:
        return ""
    v = row[col]
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return ""
    return str(v)


def run_label(runs: pd.DataFrame | None, path: str, root: Path) -> str:
    """'✗ name/run_id · failed · 2 ranks' (plain text, never Markdown).

    Only what the listing knows (never what loading adds, such as the verdict): a widget's
    option labels must not change between reruns, or Streamlit drops the user's choice.
    """
    try:
        rel = str(Path(path).relative_to(root))
    except ValueError:
        rel = Path(path).name
    if runs is None or "path" not in runs.columns:
        return rel
    match = runs[runs["path"].astype(str) == path]
    if not len(match):
        return rel
    row = match.iloc[0]
    status = _cell(row, "status")
    parts = [rel]
    for text in (status, _cell(row, "verdict")):
        if text:
            parts.append(text)
    ws = _cell(row, "world_size")
    try:
        n_ranks = int(float(ws)) if ws else 1
    except ValueError:
        n_ranks = 1
    if n_ranks > 1:
        parts.append(f"{n_ranks} ranks")
    if _cell(row, "error") and status != "failed":
        parts.append("error")
    return STATUS_MARK.get(status, "? " if status else "") + " · ".join(parts)


def display_table(runs: pd.DataFrame, root: Path,
                  summaries: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The runs table as shown: one row per run, its verdict, one-line reason and device from
    the run's row (``_shown.report_row``), paths relative to the traces folder, missing
    values blank.

    Runs under `examples/` are marked as examples (the curated runs shipped in traces/).
    """
    rows = []
    for _, row in runs.iterrows():
        path = str(row["path"])
        summary = summaries.get(path, {})
        rel = _rel(path, root)
        rows.append({
            "run": rel,
            "name": _cell(row, "name"),
            "size": _size(summary.get("size")),
            "verdict": str(summary.get("verdict") or ""),
            "why": str(summary.get("verdict_reason") or ""),
            "device": _device(summary),
            "ranks": _cell(row, "world_size").removesuffix(".0"),
            "status": _cell(row, "status"),
            "started": _cell(row, "started_at")[:19].replace("T", " "),
            "example": "example" if rel.startswith(EXAMPLES + "/") else "",
            "error": _cell(row, "error"),
        })
    return pd.DataFrame(rows, columns=DISPLAY_COLUMNS)


def _size(value: object) -> str:
    """The problem size as a plain number ('4096'), blank when unknown."""
    if isinstance(value, int | float) and value == value:
        return f"{value:g}"
    return ""


def _device(summary: dict[str, Any]) -> str:
    return str(summary.get("device") or "")


def _rel(path: object, root: Path) -> str:
    try:
        return str(Path(str(path)).relative_to(root))
    except ValueError:
        return str(path)
