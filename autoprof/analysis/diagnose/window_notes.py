"""What the recorder says about its own window, in the findings (so the summary says it):
``window-fitted``, the window cut to ``Watch.max_trace_mb`` / ``max_host_mb`` (the
manifest's ``budget`` with a ``why``), and ``ended-early``, a run that ended before its
schedule with a reason (the manifest's ``ended_by``: the program's exception, Ctrl+C,
SIGTERM, the program's exit, a flush). Both only read the record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoprof.analysis.diagnose.records import Diagnostic

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis


def window_fitted(ctx: Analysis) -> Diagnostic | None:
    fitted = ctx.record.window_budget if ctx.record is not None else None
    if fitted is None or not isinstance(fitted.get("why"), str):
        return None
    kept = f"{fitted.get('active')} of {fitted.get('asked_active')} active steps"
    return Diagnostic(
        id="window-fitted",
        severity="info",
        message=(f"The window was fitted to its budget and recorded {kept}: "
                 f"{fitted['why']}."),
        evidence={k: fitted.get(k) for k in (
            "max_trace_mb", "max_host_mb", "trace_mb_per_step", "first_step_host_mb",
            "asked_active", "active", "asked_repeat", "repeat", "predicted_trace_mb",
            "predicted_host_mb", "basis")},
        hint=("Raise Watch.max_trace_mb (or max_host_mb) for more steps, or record less per "
              "step (with_stack, record_shapes and profile_memory off)."),
    )


def ended_early(ctx: Analysis) -> Diagnostic | None:
    record = ctx.record
    if record is None or record.ended_by is None or record.status != "partial":
        return None
    return Diagnostic(
        id="ended-early",
        severity="info",
        message=(f"The run ended before its schedule ({record.ended_by}); it holds the "
                 f"{record.steps_recorded} step(s) recorded before that."),
        evidence={"ended_by": record.ended_by, "steps_recorded": record.steps_recorded},
        hint=("The numbers stand for the steps recorded; record again (or let the schedule "
              "finish) for more of them."),
    )
