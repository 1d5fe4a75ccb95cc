"""The report's types: ``Report`` (one run), its rows, ``FolderSummary`` and
``RankByRankReport`` (a run analysed rank by rank)."""

from autoprof.analysis.report.model.base import Model
from autoprof.analysis.report.model.ranks import AnalysedRank, RankByRankReport, Spread, WorstRank
from autoprof.analysis.report.model.report import Breakdown, FolderLine, FolderSummary, Report
from autoprof.analysis.report.model.rows import (
    Diagnostic,
    Opportunity,
    OpRow,
    RankRow,
    StepRow,
    TopOps,
    Where,
)
from autoprof.runfolder.whatif import WhatIfResult

__all__ = ["AnalysedRank", "Breakdown", "Diagnostic", "FolderLine", "FolderSummary", "Model",
           "OpRow", "Opportunity", "RankByRankReport", "RankRow", "Report", "Spread", "StepRow",
           "TopOps", "WhatIfResult", "Where", "WorstRank"]
