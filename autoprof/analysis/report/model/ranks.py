"""The report of a run analysed rank by rank (analysis/scale): ``RankByRankReport``.

What ``autoprof summary --json`` prints for a run of many ranks (``--jobs``, ``--dask``, or
the rank-by-rank reading the command picks by itself: scale/auto.py), the JSON of the
reduce's ``RunAnswer`` (``RunAnswer.report()``). The reduce reads a few numbers per rank,
never the events, so it has no run-wide verdict, findings or top ops: the ranks' spread, the
worst ranks, the run's mean breakdown and the count of each rank's verdict stand in their
place. Times in microseconds unless the name says otherwise; fields in the JSON's order.
"""

from __future__ import annotations

from autoprof.analysis.report.model.base import Json, Model, Num
from autoprof.analysis.report.model.report import Breakdown


class Spread(Model, kw_only=True):
    """A number over the ranks: median, MAD (scaled to estimate a standard deviation), min,
    max, 90th percentile; null where no rank has it."""

    median: Num | None
    mad: Num | None
    min: Num | None
    max: Num | None
    p90: Num | None


class WorstRank(Model, kw_only=True):
    """One of the ranks the others wait for first (``worst_by``), with its median step's
    robust z-score (null when infinite: every other rank equal)."""

    rank: int
    step_time_us_median: Num | None
    compute_us_median: Num | None
    exposed_comm_pct: Num | None
    z: Num | None
    verdict: str


class AnalysedRank(Model, kw_only=True):
    """One rank analysed on its own: its row of the rank table (``RankRow``'s columns), then
    its verdict's reason, breakdown, memory peaks, events and trace."""

    rank: int
    steps: int
    step_time_us_median: Num | None
    compute_us_median: Num | None
    collective_us_median: Num | None
    collective_us_total: Num | None
    collectives: int
    gpu_collectives: int
    exposed_comm_pct: Num | None
    gpu_busy_pct: Num | None
    verdict: str | None
    self_cpu_us: Num | None
    self_gpu_us: Num | None
    verdict_reason: str
    breakdown: Json
    memory_peaks: list[Json] | None
    events: int
    trace: str


class RankByRankReport(Model, kw_only=True):
    """A run analysed rank by rank (module doc); ``ranks`` sorted by rank."""

    world_size: int
    ranks_analysed: int
    events: int
    straggler_rank: int | None
    spread: dict[str, Spread]
    worst_ranks: list[WorstRank]
    worst_by: str
    outliers: list[int]
    breakdown: Breakdown
    verdicts: dict[str, int]
    warnings: list[str]
    ranks: list[AnalysedRank]
