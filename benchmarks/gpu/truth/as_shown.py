"""What a user reads, checked: every opportunity's `predicted_speedup` as `autoprof summary`
writes it, against the same fix applied by hand and timed without a profiler.

    python benchmarks/gpu/truth/as_shown.py DIR [DIR...] [--json OUT]

`evaluate.py` replays each fix with the host scaled to the ground truth's own profiler-free
baseline: the model's error when the baseline is known. A user's run does not know it; the
summary scales to the run's own untraced calls, or not at all. This script reads the summary
of each workload's run folder, exactly as the CLI and the viewer show it, and pairs every
opportunity that names a fix with every measured fix of that name, as the unit tests do
(`tests/support/truth_pairs.py` says how, the top pick included).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import (  # noqa: E402
    Workload,
    _summary_line,
    parse_args,
    summarize,
    table,
)
from support.truth_pairs import shown_workload  # noqa: E402 - tests/ put on the path by evaluate


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv, __doc__)
    workloads: list[Workload] = []
    notes: list[str] = []
    for root in args.dirs:
        data = json.loads((root / "ground_truth.json").read_text())
        for name, w in (data.get("workloads") or {}).items():
            workloads.append(shown_workload(root, name, w, notes))
    pairs = [p for w in workloads for p in w.pairs]
    print(table(pairs))
    print()
    summaries = {root.name: summarize([w for w in workloads if w.folder == root.name])
                 for root in args.dirs}
    summaries["all"] = summarize(workloads)
    for label, s in summaries.items():
        print(_summary_line(label, s))
    print("\nTop pick per workload (first opportunity naming a fix / best fix measured):")
    for w in workloads:
        print(f"- {w.folder}/{w.name}: {w.top_predicted} / {w.best_measured}"
              f"{'' if w.top_is_best else '  (not the best)'}")
    if notes:
        print("\nNotes:")
        print("\n".join(f"- {n}" for n in notes))
    if args.json:
        args.json.write_text(json.dumps({
            "pairs": [{**asdict(p), "error_pct": 100 * p.error} for p in pairs],
            "workloads": [{"folder": w.folder, "workload": w.name,
                           "best_measured": w.best_measured, "top_shown": w.top_predicted,
                           "top_is_best": w.top_is_best} for w in workloads],
            "notes": notes, "summary": summaries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
