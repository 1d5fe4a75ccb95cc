"""What a user reads, checked: every opportunity's `predicted_speedup` as `autoprof summary`
writes it, against the same fix applied by hand and timed without a profiler.

    python benchmarks/gpu/truth/as_shown.py DIR [DIR...] [--json OUT]

`evaluate.py` replays each fix with the host scaled to the ground truth's own profiler-free
baseline: the model's error when the baseline is known. A user's run does not know it; the
summary scales to the run's own untraced calls, or not at all. This script reads the summary
of each workload's run folder, exactly as the CLI and the viewer show it, and pairs every
opportunity that names a fix with every measured fix of that name (`evaluate.named_fix`).
The top pick is the opportunity listed first that names a fix; it is right when its fix is
the best fix measured (of every fix tried, modelled or not, less `no_loader`: batches already
on the device is the bound of perfect overlap, not a fix a user applies). A shown `cuda-graph`
on a step with a host sync pairs with `graph_without_sync` where no plain `cuda_graph` was
measured: capture refuses a sync, so that is the graph a user can make. An opportunity whose
fix was not tried on the GPU is listed under notes, never guessed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import (  # noqa: E402
    Pair,
    Workload,
    _summary_line,
    named_fix,
    parse_args,
    summarize,
    table,
)

import autoprof  # noqa: E402
from autoprof.analysis.report.summary import summarize as run_summary  # noqa: E402

NOT_A_FIX = ("no_loader",)
# a shown fix that a user can only apply in this measured form where the plain one is absent
APPLIED_AS = {"cuda-graph": "graph_without_sync"}


def _measured_by_named(fixes_tried: list[str]) -> dict[str, list[str]]:
    """The measured fixes of each named fix a summary can show."""
    out: dict[str, list[str]] = {}
    for fix in fixes_tried:
        named = named_fix(fix)
        if named is not None:
            out.setdefault(named, []).append(fix)
    for shown, applied in APPLIED_AS.items():
        if shown not in out and applied in fixes_tried:
            out[shown] = [applied]
    return out


def shown_workload(root: Path, name: str, w: dict[str, Any], notes: list[str]) -> Workload:
    """One workload's shown predictions paired with its measured fixes."""
    gt, record = w.get("ground_truth") or {}, w.get("record") or {}
    speedups: dict[str, Any] = gt.get("speedups") or {}
    out = Workload(root.name, name)
    run_dir = root / str(record.get("run", ""))
    if not speedups or not record.get("run") or not run_dir.is_dir():
        notes.append(f"{name}: no measured fix or no run folder")
        return out
    fixes_tried = [f for f in speedups if f not in NOT_A_FIX]
    out.best_measured = max(fixes_tried, key=lambda f: float(speedups[f]["iter"]["speedup"]))
    measured_by_named = _measured_by_named(fixes_tried)
    opportunities = run_summary(autoprof.load(run_dir)).get("opportunities") or []
    first = True
    for opp in opportunities:
        shown, value = opp.get("fix"), opp.get("predicted_speedup")
        if not shown or value is None:
            continue
        spread = opp.get("predicted_spread") or {}
        fixes = measured_by_named.get(str(shown), [])
        if not fixes:
            notes.append(f"{name}: shown `{shown}` {value:.2f}x: not tried on the GPU")
        for fix in fixes:
            sp = speedups[fix]["iter"]
            out.pairs.append(Pair(root.name, name, fix, str(shown), float(value),
                                  float(spread.get("min", value)),
                                  float(spread.get("max", value)), float(sp["speedup"]),
                                  float(sp["lo"]), float(sp["hi"])))
        if first:
            out.top_predicted = fixes[0] if fixes else f"({shown})"
            first = False
    return out


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
