"""The section a run analysed rank by rank adds to its report: ``RankByRank``.

A run of many ranks may be analysed one rank at a time (analysis/scale: ``--jobs``,
``--dask``, or the reading ``autoprof summary`` picks by itself, scale/auto.py); its report is
a ``Report`` like any other, filled by the reduce (scale/report.py), with this section under
``rank_by_rank``. The reduce reads a few numbers per rank, never the events: the section holds
what it adds, the ranks' spread, the worst ranks, the outliers and the count of each rank's
verdict. Times in microseconds unless the name says otherwise; fields in the JSON's order.
"""

from __future__ import annotations

from autoprof.analysis.report.model.base import Model, Num


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


class RankByRank(Model, kw_only=True):
    """What the reduce adds to the report of a run analysed rank by rank (module doc):
    how many ranks it analysed, the ranks' ``spread`` per measure, the first ranks by
    ``worst_by`` (the straggler rule's key), the ranks whose robust z passes 3.5, how many
    ranks got each verdict, and the ranks' load warnings (``rank R: ...``)."""

    ranks_analysed: int
    spread: dict[str, Spread]
    worst_ranks: list[WorstRank]
    worst_by: str
    outliers: list[int]
    verdicts: dict[str, int]
    warnings: list[str]
