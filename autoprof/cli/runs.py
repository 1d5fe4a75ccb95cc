"""`autoprof summary FOLDER`: one line per run under a traces folder (text, JSON, markdown)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from autoprof import runfolder
from autoprof.cli.common import EXIT_BAD_INPUT, MAX_PATH_CHARS, PROGRESS_AFTER_S, error_line
from autoprof.units import fmt_us, safe_text


def runs_markdown(root: Path) -> int:
    """`--format markdown` on a folder of runs: the `--json` listing, as a markdown table."""
    import contextlib
    import io

    from autoprof.analysis.report.markdown import render_runs_markdown
    from autoprof.analysis.report.model import FolderSummary

    listing = io.StringIO()
    with contextlib.redirect_stdout(listing):
        status = summary_of_runs(root, True)
    if listing.getvalue():
        folder = FolderSummary.from_json(listing.getvalue(), where=str(root))
        sys.stdout.write(render_runs_markdown(folder))
    return status




def is_folder_of_runs(path: Path) -> bool:
    """A folder with no manifest of its own, with runs or traces in its sub-folders (a run
    folder has a manifest; a folder of per-rank traces holds them directly)."""
    from autoprof.analysis import find_runs

    if not path.is_dir() or (path / runfolder.MANIFEST).exists():
        return False
    found = find_runs(path)
    # run folders anywhere below, or traces in sub-folders (not loose per-rank traces here)
    return bool(len(found)) and any(
        Path(str(p)).is_dir() or Path(str(p)).parent != path for p in found["path"]
    )


def summary_of_runs(root: Path, as_json: bool) -> int:
    """One line per run under `root`: verdict, GPU busy, self CPU and GPU time."""
    from autoprof.analysis import TraceError, compare, find_runs, load

    found = find_runs(root)
    if found.empty:
        return error_line(root, "no runs or traces under this folder")
    rows: list[dict[str, Any]] = []
    skipped = 0
    started = time.monotonic()
    shown = False
    for i, row in enumerate(found.itertuples(index=False)):
        if time.monotonic() - started > PROGRESS_AFTER_S:
            print(f"\rautoprof: {i + 1}/{len(found)} {safe_text(row.path, MAX_PATH_CHARS)} ",
                  end="", file=sys.stderr)
            shown = True
        entry: dict[str, Any] = {"path": str(row.path), "name": row.name, "error": None}
        try:
            run = load(Path(str(row.path)))
            entry.update(compare([run]).drop(columns=["path", "name"]).iloc[0].to_dict())
        except TraceError as err:
            if "not a torch.profiler trace" in str(err):  # some other JSON file
                skipped += 1
                continue
            entry["error"] = str(err)
        rows.append(entry)
    if shown:
        print(file=sys.stderr)
    from autoprof.analysis.report.summary import jsonable

    if as_json:
        sys.stdout.write(json.dumps(jsonable({"path": str(root), "runs": rows,
                                              "skipped_not_traces": skipped}),
                                    allow_nan=False) + "\n")
    else:
        note = f"; {skipped} other JSON file(s) skipped" if skipped else ""
        print(f"autoprof summary: {safe_text(root, MAX_PATH_CHARS)} ({len(rows)} runs{note}; "
              "`autoprof summary RUN` for one)")
        print(f"  {'verdict':<15} {'step':>9} {'size':>7} {'GPU busy':>9} {'self CPU':>11} "
              f"{'self GPU':>11}  run")
        for r in rows:
            path = safe_text(r["path"], MAX_PATH_CHARS)
            if r["error"]:
                print(f"  {'error':<15} {'':>9} {'':>7} {'':>9} {'':>11} {'':>11}  {path}: "
                      f"{safe_text(r['error'])}")
                continue
            busy = r.get("gpu_busy_pct")
            busy_text = "n/a" if busy is None or busy != busy else f"{busy:.1f}%"
            print(f"  {safe_text(r['verdict']):<15} {_step_text(r):>9} {_size_text(r):>7} "
                  f"{busy_text:>9} {fmt_us(r['self_cpu_us']):>11} "
                  f"{fmt_us(r['self_gpu_us']):>11}  {path}")
    return 0 if any(not r["error"] for r in rows) else EXIT_BAD_INPUT


def _step_text(row: dict[str, Any]) -> str:
    """The median time of a profiled step (its CPU span), to tell runs apart at a glance."""
    value = row.get("step_cpu_span_us_median")
    return "n/a" if not isinstance(value, int | float) or value != value else fmt_us(value)


def _size_text(row: dict[str, Any]) -> str:
    """The problem size the run states (the manifest's size, a folder named like n64); blank
    for a run that states none, never a guess from its first op."""
    value = row.get("size_stated")
    return "" if not isinstance(value, int | float) or value != value else f"{value:g}"
