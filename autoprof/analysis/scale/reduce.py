"""The reduce: the run's answer from its ranks' ``RankResult``s, never from their events.

Everything here costs O(ranks) (a few numbers per rank), however many events each rank has:

- the rank table: one row per rank, the rows the map computed (metrics/ranks.RANK_COLUMNS);
- the straggler: ``metrics.ranks.straggler_from`` over that table, the rule a whole-run
  summary applies (NCCL: least exposed communication; host collectives: longest compute);
- exposed communication: each rank's share of its step, and its spread;
- the ranks' spread of median step time and exposed communication: median, MAD (the median
  absolute deviation, scaled by 1.4826 so it estimates a standard deviation for normal data),
  min, max, 90th percentile;
- the worst ranks: the first WORST of ``metrics.ranks.rank_order``, the straggler rule's
  ordering (the rank the others wait for first: so the straggler, when there is one, heads
  the list; ``worst_by`` names the key), each with its median step time's robust z-score
  ((x - median) / MAD); ``outliers`` are the ranks whose |z| passes OUTLIER_Z (3.5, Iglewicz
  and Hoaglin's cut for the modified z-score);
- the run's breakdown: each bucket's mean over every profiled step of every rank (the ranks'
  means weighted by their step counts: what ``Breakdown.mean()`` of the merged table gives);
- how many ranks got each verdict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from autoprof.analysis.scale.result import RankResult
from autoprof.runfolder import Manifest

if TYPE_CHECKING:
    from autoprof.analysis.report.model import Report

MAD_TO_SD = 1.4826
OUTLIER_Z = 3.5
WORST = 5


@dataclass(frozen=True)
class RunAnswer:
    """The run's answer over its ranks (module doc); ``ranks`` sorted by rank; ``path`` and
    ``record`` (its manifest) name the run in its report."""

    ranks: list[RankResult]
    world_size: int
    events: int
    straggler_rank: int | None
    spread: dict[str, dict[str, float | None]]
    worst_ranks: list[dict[str, Any]]
    outliers: list[int]
    breakdown: dict[str, Any]
    verdicts: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    worst_by: str = "step_time_us_median"  # the rank table column worst_ranks is ordered by
    path: str = ""
    record: Manifest | None = None

    def rank_table(self) -> pd.DataFrame:
        """One row per rank, the rank table a whole-run load computes."""
        from autoprof.analysis.metrics.ranks import RANK_COLUMNS

        return pd.DataFrame([r.row for r in self.ranks], columns=RANK_COLUMNS)

    def report(self) -> Report:
        """The answer as the run's typed report (scale/report.py), the type a run read as one
        table gets: what ``autoprof summary --json`` prints for the run. Built once per
        answer (about 150 ms at 1,024 ranks on a 2-core machine: the viewer's pages ask each
        rerun); treat it as read-only."""
        return self._report

    @cached_property
    def _report(self) -> Report:
        from autoprof.analysis.scale.report import answer_report

        return answer_report(self)

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON as a dict (``report().to_dict()``)."""
        return self.report().to_dict()


def _spread(values: np.ndarray) -> dict[str, float | None]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return {"median": None, "mad": None, "min": None, "max": None, "p90": None}
    med = float(np.median(finite))
    return {"median": med, "mad": MAD_TO_SD * float(np.median(np.abs(finite - med))),
            "min": float(finite.min()), "max": float(finite.max()),
            "p90": float(np.percentile(finite, 90))}


def robust_z(values: np.ndarray) -> np.ndarray:
    """(x - median) / (1.4826 MAD); 0 where every value equals the median (MAD 0)."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return np.zeros(len(values))
    med = np.median(finite)
    mad = MAD_TO_SD * np.median(np.abs(finite - med))
    if mad == 0:  # most ranks equal: any other value is infinitely far out
        return np.where(values > med, np.inf, np.where(values < med, -np.inf, 0.0))
    return np.asarray((values - med) / mad, dtype=float)


def _breakdown(results: Sequence[RankResult]) -> dict[str, Any]:
    steps = np.array([float(r.breakdown.get("steps") or 0) for r in results])
    total = float(steps.sum())
    if total <= 0:
        return {"step_us": 0.0, "buckets_us": {}, "buckets_pct": {}, "steps": 0}
    step_us = float(sum(float(r.breakdown.get("step_us") or 0) * n
                        for r, n in zip(results, steps, strict=True)) / total)
    names = list(dict.fromkeys(b for r in results for b in r.breakdown.get("buckets_us", {})))
    buckets = {b: float(sum(float(r.breakdown.get("buckets_us", {}).get(b) or 0) * n
                            for r, n in zip(results, steps, strict=True)) / total)
               for b in names}
    pct = {b: 100.0 * v / step_us if step_us > 0 else 0.0 for b, v in buckets.items()}
    return {"step_us": step_us, "buckets_us": buckets, "buckets_pct": pct, "steps": int(total)}


def reduce_ranks(results: Sequence[RankResult], world_size: int = 1, path: str = "",
                 record: Manifest | None = None) -> RunAnswer:
    """The run's answer (module doc) from its ranks' results, in any order; ``path`` and
    ``record`` name the run (``RunAnswer``)."""
    from autoprof.analysis.metrics.ranks import RANK_COLUMNS, order_by, rank_order, straggler_from

    ordered = sorted(results, key=lambda r: r.rank)
    table = pd.DataFrame([r.row for r in ordered], columns=RANK_COLUMNS)
    step = np.array([r.step_time_us_median for r in ordered], dtype=float)
    exposed = np.array([r.exposed_comm_pct for r in ordered], dtype=float)
    z = robust_z(step)
    position = {r.rank: i for i, r in enumerate(ordered)}
    slowest = [position[r] for r in rank_order(table)[:WORST]]
    worst = [{"rank": ordered[i].rank, "step_time_us_median": float(step[i]),
              "compute_us_median": _float(ordered[i].row.get("compute_us_median")),
              "exposed_comm_pct": float(exposed[i]), "z": float(z[i]),
              "verdict": ordered[i].verdict} for i in slowest]
    outliers = [ordered[i].rank for i in np.flatnonzero(np.abs(z) > OUTLIER_Z)]
    warnings = [f"rank {r.rank}: {w}" for r in ordered for w in r.warnings]
    return RunAnswer(
        ranks=ordered,
        world_size=max([world_size, len(ordered), *(r.world_size for r in ordered)]),
        events=sum(r.events for r in ordered),
        straggler_rank=straggler_from(table) if len(table) else None,
        spread={"step_time_us_median": _spread(step), "exposed_comm_pct": _spread(exposed)},
        worst_ranks=worst, outliers=outliers, breakdown=_breakdown(ordered),
        verdicts=dict(Counter(r.verdict for r in ordered)), warnings=warnings,
        worst_by=order_by(table) if len(table) else "step_time_us_median",
        path=path, record=record,
    )


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")
