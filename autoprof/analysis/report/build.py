"""``build_report(run)``: a run's analysis as the typed ``Report``.

It reads the report's JSON as the summary cache beside the first trace keeps it
(``summary_cache``; on a miss ``summarize(run)`` computes the report and the cache stores its
JSON) into the type, so the report and ``autoprof summary --json`` are the same record by
construction.
"""

from __future__ import annotations

from autoprof.analysis.analysis import RunLike
from autoprof.analysis.report.model import Report


def build_report(run: RunLike) -> Report:
    """The run's report; ValueError naming the run when its summary does not fit the type."""
    from autoprof.analysis.report.summary_cache import cached_summary

    return Report.from_dict(cached_summary(run), where=str(run.path))
