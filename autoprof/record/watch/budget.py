"""A triggered window that cannot hurt the job: its size predicted from the healthy window's
recorded steps, and its schedule fitted to ``Watch.max_trace_mb``.

The healthy window ran the same function with the same options, so its trace per recorded
step (the uncompressed size of its traces, read from each gzip file's trailer, or a raw trace
not yet compressed, over its recorded steps and its ranks) predicts a triggered window's.
torch.profiler holds its events in host memory until the window's cycle ends, about
``HOST_PER_TRACE`` times the trace they become (measured by ``benchmarks/watch_memory.py``):
the window is fitted to both ``max_trace_mb`` and ``max_host_mb``. Plain files, no torch.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from autoprof import runfolder
from autoprof.record.options import Schedule

_MB = 1024 * 1024
# host memory a window's events take per byte of its uncompressed trace (CPU events, torch
# 2.13: 10.1 and 10.0 at 2 and 8 steps of 4000 ops; benchmarks/results-watch-memory.json)
HOST_PER_TRACE = 10.0


@dataclass(frozen=True)
class Fit:
    """The budget of one triggered window, as its manifest's ``budget`` key says it:
    ``trace_mb_per_step`` predicted from ``from_run`` (None: nothing to predict from, the
    schedule is kept), the schedule's ``active`` and ``repeat`` asked and kept, and
    ``predicted_trace_mb`` and ``predicted_host_mb`` of the window as fitted; ``basis``
    says what the prediction came from."""

    max_trace_mb: float
    max_host_mb: float
    trace_mb_per_step: float | None
    from_run: str
    asked_active: int
    active: int
    asked_repeat: int
    repeat: int
    predicted_trace_mb: float | None
    predicted_host_mb: float | None = None
    # what predicted it: the healthy window's trace (a triggered window, before it starts),
    # or the window's own first recorded step (``first_step``: its heap growth, measured)
    basis: str = "healthy_window"
    first_step_host_mb: float | None = None  # that step's heap growth (``first_step`` only)
    why: str | None = None  # what was cut and why, one line (None: nothing was cut)

    @property
    def fits(self) -> bool:
        """Does even one recorded step fit the budget?"""
        return self.active >= 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def trace_bytes(path: Path) -> int:
    """A trace's uncompressed size: a gzip's trailer (its size modulo 4 GiB), or the size of
    a raw trace not yet compressed; 0 when unreadable."""
    try:
        if path.name.endswith(runfolder.RAW_SUFFIX):
            return path.stat().st_size
        with path.open("rb") as handle:
            handle.seek(-4, 2)
            return int(struct.unpack("<I", handle.read(4))[0])
    except (OSError, struct.error):
        return 0


def bytes_per_step(run_dir: Path, recorded_steps: int) -> float | None:
    """The healthy window's trace bytes per recorded step on one rank; None when it has no
    trace or recorded no step."""
    if recorded_steps < 1:
        return None
    try:
        names = {p.name if p.name.endswith(runfolder.TRACE_SUFFIX)
                 else runfolder.final_trace_name(p.name)
                 for p in run_dir.iterdir()
                 if p.name.endswith((runfolder.TRACE_SUFFIX, runfolder.RAW_SUFFIX))}
        ranks = max(1, len(list(run_dir.glob(runfolder.RANK_MANIFEST_GLOB))))
    except OSError:
        return None
    total = sum(_one_trace(run_dir / name) for name in names)
    return total / ranks / recorded_steps if total > 0 else None


def _one_trace(final: Path) -> int:
    """A cycle's trace counted once while the finisher compresses it: its gzip once that is
    in place (written whole, then renamed; the raw trace is removed after it), else its raw
    trace, else the gzip that replaced the raw trace meanwhile."""
    if final.exists():
        return trace_bytes(final)
    raw = final.with_name(runfolder.raw_trace_name(final.name))
    return trace_bytes(raw) or trace_bytes(final)


def fit(schedule: Schedule, max_trace_mb: float, per_step_bytes: float | None,
        from_run: str, max_host_mb: float = float("inf")) -> Fit:
    """The schedule's recorded steps cut to what the budgets hold (the trace's, and the host
    memory's at ``HOST_PER_TRACE``): ``active`` first, then ``repeat`` (``repeat=0``, cycles
    until a flush: each cycle fits)."""
    asked_active, asked_repeat = schedule.active, schedule.repeat
    if per_step_bytes is None or per_step_bytes <= 0:
        return Fit(max_trace_mb, max_host_mb, None, from_run, asked_active, asked_active,
                   asked_repeat, asked_repeat, None)
    steps = int(min(max_trace_mb, max_host_mb / HOST_PER_TRACE) * _MB // per_step_bytes)
    active = min(asked_active, steps)
    repeat = asked_repeat
    if active >= 1 and asked_repeat > 1:
        repeat = max(1, min(asked_repeat, steps // active))
    cycles = repeat if repeat > 0 else 1
    predicted = per_step_bytes * max(active, 0) * cycles / _MB
    return Fit(max_trace_mb, max_host_mb, round(per_step_bytes / _MB, 6), from_run,
               asked_active, active, asked_repeat, repeat, round(predicted, 6),
               round(predicted * HOST_PER_TRACE, 6))


def fitted_schedule(schedule: Schedule, fitted: Fit) -> Schedule:
    """The schedule a fitting window runs (the same one when nothing was cut)."""
    if (fitted.active, fitted.repeat) == (schedule.active, schedule.repeat):
        return schedule
    return replace(schedule, active=fitted.active, repeat=fitted.repeat)
