"""The replay brought to the pace of the untraced program before a fix is replayed.

The profiler slows the host (each op and launch it records costs time); a prediction is of
the program run without it. Two references are timed without the profiler: the untraced
calls of the recording itself (warm-up and wait calls, each synchronised, so the call alone
with its GPU tail) and, where one was timed, the untraced iteration (the caller's loop
included; the truth suite's profiler-free baseline). `host_baseline` gives the `ScaleHost`
changes that bring the replay to them:

- the step holds a DataLoader's loop (MIN_BETWEEN_PCT or more of it between calls, most of
  that in `DataLoader.__next__`): the call's own host time scaled so that the call
  replayed alone (the loop removed) equals the untraced call; then, when an untraced
  iteration is known, the loop's host time scaled (up to LOOP_HIGHEST times) so that the
  step equals it. The untraced calls time the call alone, so they never set the loop's pace;
- otherwise every host cost scaled so that the replayed step equals the untraced iteration,
  or, when the step is the call (under MIN_BETWEEN_PCT between calls), the untraced call.
"""

from __future__ import annotations

import pandas as pd

from autoprof.analysis.metrics.replay.changes import Change, OverlapBetweenCalls, ScaleHost
from autoprof.analysis.metrics.replay.loop import Loop
from autoprof.analysis.metrics.replay.replay import fit_host_scale

MIN_BETWEEN_PCT = 10.0  # of each step between calls: the step holds the caller's loop
LOADER_NAME = "DataLoader.__next__"  # how loop.py names a DataLoader's fetch
LOOP_HIGHEST = 4.0  # the loop may run slower untraced (other processes share the host)


def holds_loop(loop: Loop | None) -> bool:
    """Whether the profiled step holds the caller's loop as well as the call."""
    return loop is not None and loop.between_pct.median >= MIN_BETWEEN_PCT


def loader_loop(loop: Loop | None) -> bool:
    """Whether the step holds the caller's loop and a DataLoader's fetch is its largest part
    (the loop a loader fix changes)."""
    return holds_loop(loop) and loop is not None and bool(len(loop.where)) and \
        loop.where.iloc[0]["name"] == LOADER_NAME


def host_baseline(events: pd.DataFrame, call: str | None, loop: Loop | None,
                  untraced_call_us: float | None, untraced_step_us: float | None = None,
                  rank: int | None = None) -> list[Change]:
    """The changes that bring the replayed step to the untraced references (module doc)."""
    if call is not None and loader_loop(loop):
        return _call_then_loop(events, call, untraced_call_us, untraced_step_us, rank)
    target = untraced_step_us or (None if holds_loop(loop) else untraced_call_us)
    if target is None or target <= 0:
        return []  # the untraced calls time the call alone, the step holds the loop too
    return [ScaleHost(fit_host_scale(events, target, rank=rank))]


def _call_then_loop(events: pd.DataFrame, call: str, untraced_call_us: float | None,
                    untraced_step_us: float | None, rank: int | None) -> list[Change]:
    out: list[Change] = []
    if untraced_call_us is not None and untraced_call_us > 0:
        factor = fit_host_scale(events, untraced_call_us, rank=rank, region=call,
                                measure=[OverlapBetweenCalls(call)])
        out.append(ScaleHost(factor, call))
    if untraced_step_us is not None and untraced_step_us > 0:
        factor = fit_host_scale(events, untraced_step_us, rank=rank, region=call, inside=False,
                                before=out, highest=LOOP_HIGHEST)
        out.append(ScaleHost(factor, call, inside=False))
    return out
