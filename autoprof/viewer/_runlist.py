"""The runs table from `find_runs`, turned into selectable paths and one-line labels."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

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
                  verdicts: dict[str, str] | None = None) -> pd.DataFrame:
    """The runs table for display: verdicts filled in from loaded runs, paths relative to the
    traces folder, known columns first."""
    df = runs.copy()
    if verdicts and "path" in df.columns:
        known = df["path"].astype(str).map(verdicts)
        df["verdict"] = known.where(known.notna(), df.get("verdict"))
    if "path" in df.columns:
        df["path"] = [_rel(p, root) for p in df["path"]]
    first = [c for c in ("name", "run_id", "started_at", "status", "verdict", "world_size",
                         "error", "path") if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


def _rel(path: object, root: Path) -> str:
    try:
        return str(Path(str(path)).relative_to(root))
    except ValueError:
        return str(path)
