"""The rows of the report: a diagnostic, an opportunity, a top op, a step, a rank, and the
what-if result (runfolder/whatif.py, the record whatif.json stores). Times in microseconds
unless the name says otherwise; field order is the JSON's."""

from __future__ import annotations

from autoprof.analysis.kinds import Severity
from autoprof.analysis.report.model.base import UNSET, Json, Model, Num


class Diagnostic(Model, kw_only=True):
    """One finding of one check (diagnose/records.Diagnostic as written)."""

    id: str
    severity: Severity
    message: str
    evidence: Json
    hint: str | None


class Where(Model, kw_only=True):
    """Where an opportunity's time is spent: an op or a line, and its time per step."""

    name: str
    us_per_step: Num | None
    source: str = UNSET
    module: str = UNSET


class Opportunity(Model, kw_only=True):
    """A bucket of the step that a fix could take back (diagnose/opportunities.py)."""

    cause: str
    us_per_step: Num | None
    pct_of_step: Num | None
    max_speedup: Num | None = UNSET
    where: list[Where]
    hint: str | None
    evidence: Json = UNSET
    fix: str | None = UNSET
    predicted_speedup: Num | None = UNSET
    prediction_error: Num | None = UNSET
    predicted_spread: Json = UNSET
    ranked_by: str = UNSET
    predicted_interval: Json = UNSET


class OpRow(Model, kw_only=True):
    """An op's calls and self/total times on the host and the device (metrics/ops.py)."""

    name: str
    lane: str = UNSET
    calls: int
    self_cpu_us: Num | None
    cpu_total_us: Num | None
    self_device_us: Num | None
    device_total_us: Num | None
    source: str = UNSET
    module: str = UNSET


class TopOps(Model, kw_only=True):
    by_self_cpu: list[OpRow]
    by_self_device: list[OpRow]


class StepRow(Model, kw_only=True):
    """One recorded step of one rank (metrics/steps.per_step)."""

    rank: int
    step: int
    start_us: Num | None = UNSET
    end_us: Num | None = UNSET
    cpu_span_us: Num | None
    self_cpu_us: Num | None
    gpu_work_us: Num | None
    gpu_busy_us: Num | None
    gpu_window_us: Num | None = UNSET
    gpu_idle_us: Num | None
    kernels: int
    launches: int


class RankRow(Model, kw_only=True):
    """One rank of the run with its own breakdown, opportunities and verdict. A run analysed
    rank by rank (``Report.rank_by_rank``) gives each rank's verdict reason, memory peaks,
    events and trace in place of its opportunities."""

    rank: int
    steps: int
    step_time_us_median: Num | None = UNSET
    compute_us_median: Num | None = UNSET
    collective_us_median: Num | None = UNSET
    collective_us_total: Num | None = UNSET
    collectives: int = UNSET
    gpu_collectives: int = UNSET
    exposed_comm_pct: Num | None = UNSET
    gpu_busy_pct: Num | None = UNSET
    verdict: str | None = UNSET
    self_cpu_us: Num | None = UNSET
    self_gpu_us: Num | None = UNSET
    breakdown: Json = UNSET
    opportunities: list[Json] = UNSET
    verdict_reason: str = UNSET
    memory_peaks: list[Json] | None = UNSET
    events: int = UNSET
    trace: str = UNSET
