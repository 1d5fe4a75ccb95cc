"""The report's types: ``Report`` (one run, and a run analysed rank by rank with its
``RankByRank`` section), its rows, and ``FolderSummary``."""

from autoprof.analysis.report.model.base import Model
from autoprof.analysis.report.model.ranks import RankByRank, Spread, WorstRank
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

__all__ = ["Breakdown", "Diagnostic", "FolderLine", "FolderSummary", "Model", "OpRow",
           "Opportunity", "RankByRank", "RankRow", "Report", "Spread", "StepRow", "TopOps",
           "WhatIfResult", "Where", "WorstRank"]
