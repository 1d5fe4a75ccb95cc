"""The lab's tables, one per question, each a JSON-ready dict keyed by truth set.

- `as_shown`: every opportunity's `predicted_speedup` as the summary shows it, against the
  fix applied by hand and timed without a profiler (`benchmarks/gpu/truth/as_shown.py`).
- `evaluated`: the replay with the set's profiler-free baseline known (`evaluate.py`).
- `repeat`: the ground truth's own floor, its fixes timed again in fresh profiler-free
  processes (`repeat.py`), for the sets that hold `ground_truth_repeat.json`.
- `paced_without_block`: `as_shown` on copies of the runs with `after_window_iter_ms`
  taken out of their manifests (the pace before the block of calls after the window).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.validation.sets import truth_code_on_path

truth_code_on_path()

import as_shown  # noqa: E402
import evaluate  # noqa: E402
import repeat  # noqa: E402


def _workloads_table(workloads: list[Any], notes: list[str], top_key: str) -> dict[str, Any]:
    pairs = [p for w in workloads for p in w.pairs]
    return {
        "summary": evaluate.summarize(workloads),
        "pairs": [{**asdict(p), "error_pct": round(100 * p.error, 2)} for p in pairs],
        "not_the_best": sorted(w.name for w in workloads
                               if w.best_measured is not None and not w.top_is_best),
        "workloads": [{"workload": w.name, "best_measured": w.best_measured,
                       top_key: w.top_predicted} for w in workloads],
        "notes": notes,
    }


def shown_workloads(folder: Path, notes: list[str]) -> list[Any]:
    """Each workload of one set, its shown predictions paired with its measured fixes."""
    data = json.loads((folder / "ground_truth.json").read_text())
    return [as_shown.shown_workload(folder, name, w, notes)
            for name, w in (data.get("workloads") or {}).items()]


def as_shown_table(folder: Path) -> dict[str, Any]:
    notes: list[str] = []
    return _workloads_table(shown_workloads(folder, notes), notes, "top_shown")


def evaluated_table(folder: Path) -> dict[str, Any]:
    got = evaluate.evaluate_folder(folder)
    return _workloads_table(got.workloads, got.notes, "top_predicted")


def repeat_table(folder: Path) -> dict[str, Any] | None:
    again = folder / "ground_truth_repeat.json"
    if not again.is_file():
        return None
    rows = repeat.agreements(folder / "ground_truth.json", again)
    return {"floor": repeat.floor(rows),
            "fixes": [{**asdict(r), "difference_pct": round(r.difference_pct, 2)}
                      for r in rows]}


def paced_without_block_table(folder: Path) -> dict[str, Any] | None:
    """`as_shown` with `after_window_iter_ms` taken out of each run's manifest; None for a
    set recorded without it."""
    manifests = list(folder.glob("runs/*/*/manifest.json"))
    if not any("after_window_iter_ms" in json.loads(m.read_text()) for m in manifests):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy)
        for path in copy.glob("runs/*/*/manifest.json"):
            data = json.loads(path.read_text())
            data.pop("after_window_iter_ms", None)
            path.write_text(json.dumps(data))
        table = as_shown_table(copy)
    return {"summary": table["summary"], "not_the_best": table["not_the_best"]}


TABLES = {
    "as_shown": as_shown_table,
    "evaluated": evaluated_table,
    "repeat": repeat_table,
    "paced_without_block": paced_without_block_table,
}
