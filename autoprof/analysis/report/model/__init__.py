"""The report's types: ``Report`` (one run), its rows, and ``FolderSummary``."""

from autoprof.analysis.report.model.base import Model
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
           "Opportunity", "RankRow", "Report", "StepRow", "TopOps", "WhatIfResult", "Where"]
