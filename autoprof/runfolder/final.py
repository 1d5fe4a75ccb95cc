"""The final-status rule: what a finished run folder's manifest says, from what the recording
process asked for and what the folder holds (its whole schedule cycles, an error)."""

from __future__ import annotations

from typing import Any, Literal

from autoprof.runfolder.files import FINAL_STATUSES
from autoprof.runfolder.manifest import Manifest, dict_or_none, status_or_none

Whole = Literal["complete", "partial"]


def reopened(manifest: Manifest) -> Manifest:
    """A record whose last finish kept plain traces after an error (``retry``), as it was
    before that finish, so the next one decides again; any other record unchanged."""
    retry = manifest.retry
    if retry is None:
        return manifest
    return manifest.replace(status="recording", requested_status=status_or_none(
        retry.get("requested_status")), error=dict_or_none(retry.get("error")), retry=None)


def cycles_status(repeat: int, cycles: int) -> Whole:
    """Whole cycles kept, nothing asked: ``complete`` when every cycle the schedule asks for
    was written (``repeat=0`` cycles until stopped, so any saved cycle is whole)."""
    return "complete" if repeat == 0 or cycles >= repeat else "partial"


def steps_in(manifest: Manifest, cycles: int) -> int:
    """Steps recorded in ``cycles`` whole schedule cycles (what the folder tells when the
    recording process died before saying so)."""
    return manifest.active * cycles


def held_steps(manifest: Manifest, cycles: int) -> int | None:
    """``steps_recorded``, at most what ``cycles`` traces hold (none without a trace)."""
    steps, most = manifest.steps_recorded, steps_in(manifest, cycles)
    return steps if steps is None or (most == 0 and cycles) else min(steps, most)


NO_TRACE_ASKED = "no trace was written"
NO_TRACE_DIED = "the recording process ended before any trace was written"
DIED = "the recording process ended before handing over its run"


def final_status(manifest: Manifest, cycles: int,
                 export_error: dict[str, str] | None = None) -> Manifest:
    """The finished record: what the recording process asked for (``requested_status``),
    unless the folder says no. Any error (the record's, else the finisher's ``export_error``)
    fails the run; no trace fails it unless a ``partial`` run was asked for; a process that
    died after exporting keeps its whole cycles (``cycles_status``); never more steps than
    its traces hold (``held_steps``)."""
    asked = manifest.requested_status
    error = manifest.error if manifest.error is not None else export_error
    changes: dict[str, Any] = {"requested_status": None, "error": error,
                               "steps_recorded": held_steps(manifest, cycles)}
    if error is not None:
        changes["status"] = "failed"
    elif cycles == 0 and asked != "partial":  # flushed before a recorded step: no trace
        changes["status"] = "failed"
        changes["error"] = {"type": "NoTrace",
                            "message": NO_TRACE_ASKED if asked else NO_TRACE_DIED,
                            "phase": "export"}
    elif asked in FINAL_STATUSES:
        changes["status"] = asked
    else:  # the process died after exporting: whole cycles are kept
        changes["status"] = cycles_status(manifest.repeat, cycles)
        changes["ended_by"] = DIED
    return manifest.replace(**changes)
