"""Which measured fix of a truth set each named fix is, and the pairs of a prediction with
the fix applied by hand and timed without a profiler (docs/validation.md).

The unit tests hold the summary's shown predictions to these pairs
(tests/analysis/h200/test_truth_as_shown.py); the validation lab builds its tables from the
same pairs (benchmarks/gpu/truth/as_shown.py, evaluate.py). ``shown_workload`` pairs every
opportunity of a workload's summary that names a fix with every measured fix of that name.
The top pick is the opportunity listed first that names a fix; it is right when its fix is
the best fix measured (of every fix tried, modelled or not, less `no_loader`: batches already
on the device is the bound of perfect overlap, not a fix a user applies). A shown `cuda-graph`
on a step with a host sync pairs with `graph_without_sync` where no plain `cuda_graph` was
measured: capture refuses a sync, so that is the graph a user can make. An opportunity whose
fix was not tried on the GPU is listed under notes, never guessed.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import autoprof
from autoprof.analysis.metrics.replay.fixes import FixName
from autoprof.analysis.report.summary import summarize as run_summary
from support.truth import GOAL_ABS_ERROR

MEDIAN_GOAL = 0.10  # the median |error| the goal allows (docs/validation.md)

# the ground truth's fix names that are one replayed fix (the truth README describes each)
FIX_OF: dict[str, FixName] = {
    "cuda_graph": "cuda-graph",
    "remove": "remove-line",
    "keep_on_gpu": "remove-sync",
    "where": "remove-sync",
    "mask_weights": "remove-sync",
    "pinned_async": "remove-sync",
    "graph_without_sync": "sync-free-cuda-graph",
    "pin_nonblocking": "pin-memory",
    "no_loader": "no-loader",
    "adamw_fused": "fused-optimizer",
    "addmm": "addmm",
}
# more DataLoader workers with pinned memory and non_blocking copies, any count
WORKERS = re.compile(r"^workers\d+_pin_nonblocking$")


def named_fix(fix: str) -> FixName | None:
    """The named replay fix a ground-truth fix is, or None when the replay has none."""
    if fix in FIX_OF:
        return FIX_OF[fix]
    return "loader-workers" if WORKERS.match(fix) else None


@dataclass(frozen=True)
class Pair:
    """One fix on one workload: the replayed prediction beside the measurement."""

    folder: str
    workload: str
    fix: str  # the ground truth's name
    named: str
    predicted: float  # median over the profiled steps
    predicted_min: float
    predicted_max: float
    measured: float
    measured_lo: float
    measured_hi: float

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return (self.predicted - self.measured) / self.measured


@dataclass
class Workload:
    """One workload's pairs, its best fix measured and the fix predicted best."""

    folder: str
    name: str
    pairs: list[Pair] = field(default_factory=list)
    best_measured: str | None = None
    top_predicted: str | None = None

    @property
    def top_is_best(self) -> bool:
        return self.top_predicted is not None and self.top_predicted == self.best_measured


NOT_A_FIX = ("no_loader",)
# a shown fix that a user can only apply in this measured form where the plain one is absent
APPLIED_AS = {"cuda-graph": "graph_without_sync"}


def measured_by_named(fixes_tried: list[str]) -> dict[str, list[str]]:
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
    by_named = measured_by_named(fixes_tried)
    opportunities = run_summary(autoprof.load(run_dir)).to_dict().get("opportunities") or []
    first = True
    for opp in opportunities:
        shown, value = opp.get("fix"), opp.get("predicted_speedup")
        if not shown or value is None:
            continue
        spread = opp.get("predicted_spread") or {}
        fixes = by_named.get(str(shown), [])
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


def held_to_the_goal(workloads: list[Workload]) -> None:
    """Asserts the goal docs/validation.md states: every pair's prediction inside its own
    min-max and within 25% of the fix timed by hand, the median within 10%, every judged top
    pick the best fix measured."""
    pairs = [p for w in workloads for p in w.pairs]
    assert pairs, "no prediction paired with a measured fix"
    for p in pairs:
        key = (p.workload, p.fix)
        assert p.predicted_min <= p.predicted <= p.predicted_max, key
        assert p.measured_lo <= p.measured <= p.measured_hi, key
        assert abs(p.error) <= GOAL_ABS_ERROR, (key, p.predicted, p.measured)
    assert statistics.median(abs(p.error) for p in pairs) <= MEDIAN_GOAL
    # a top pick the set never timed (shown as "(tf32)": TF32 on an fp32 MLP) cannot be judged
    judged = [w for w in workloads if w.pairs and not str(w.top_predicted).startswith("(")]
    assert [w.name for w in judged if not w.top_is_best] == []
