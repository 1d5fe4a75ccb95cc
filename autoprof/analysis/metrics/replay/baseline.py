"""The replay brought to the pace of the untraced program before a fix is replayed.

The profiler slows the host (each op and launch it records costs time); a prediction is of
the program run without it. Three references are timed without the profiler: the untraced
calls of the recording itself (warm-up and wait calls, each synchronised at both ends: the
call alone with its GPU tail), the time between two untraced warm-up calls (the caller's
loop, host only), and, where one was timed, the untraced iteration (the caller's loop
included, pipelined; the truth suite's profiler-free baseline). `host_baseline` gives the
`ScaleHost` changes that bring the replay to them:

- the call's host time is scaled so that the call replayed as the untraced calls were timed
  (the caller's loop removed, a device sync at each step's end: `SyncEachStep`) takes the
  untraced call's time less its closing sync's own cost (`idle_sync_ms`; where that was not
  timed, the trace's median wake-up after a sync stands for it). When the step is the call
  (under MIN_BETWEEN_PCT between calls), the same factor paces the little time between calls;
- a DataLoader's loop (MIN_BETWEEN_PCT or more of the step between calls, most of it in
  `DataLoader.__next__`) is then paced by the untraced iteration when one is known (the
  loop's host time scaled, up to LOOP_HIGHEST times, so that the step equals it), else left
  as profiled: the loader's pace is its producers' (a worker, or a transform in Python the
  profiler hardly slows), and the time between warm-up calls does not show it (the workers
  fill their prefetch queue while each synchronised warm-up call runs);
- any other caller's loop is paced by the untraced time between calls: the loop's host time
  times that time over the profiled one (at most LOOP_HIGHEST). Under the profiler that time
  holds the profiler's own step bookkeeping (seed_256 on an H200: 97-203 us between calls
  profiled, 19 us untraced);
- with an untraced iteration known and no DataLoader loop: every host cost scaled so that the
  replayed step equals it. The untraced calls time the call alone, so they never set the
  loop's pace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from autoprof.analysis.metrics.replay.changes import (
    Change,
    OverlapBetweenCalls,
    ScaleHost,
    SyncEachStep,
)
from autoprof.analysis.metrics.replay.loop import Loop
from autoprof.analysis.metrics.replay.replay import fit_host_scale
from autoprof.analysis.metrics.stats import name_matches

MIN_BETWEEN_PCT = 10.0  # of each step between calls: the step holds the caller's loop
LOADER_NAME = "DataLoader.__next__"  # how loop.py names a DataLoader's fetch
LOOP_HIGHEST = 4.0  # the loop may run slower untraced (other processes share the host)
WORKER_FETCH = re.compile(r"_MultiProcessingDataLoaderIter")  # a fetch from worker processes


def holds_loop(loop: Loop | None) -> bool:
    """Whether the profiled step holds the caller's loop as well as the call."""
    return loop is not None and loop.between_pct.median >= MIN_BETWEEN_PCT


def fetch_first(names: Sequence[str]) -> bool:
    """Whether a DataLoader's fetch comes first in `names`, the parts of the time between
    calls largest first (loop.py's `where`, the breakdown's `between_calls_where`)."""
    return bool(len(names)) and names[0] == LOADER_NAME


def loader_loop(loop: Loop | None) -> bool:
    """Whether the step holds the caller's loop and a DataLoader's fetch is its largest part
    (the loop a loader fix changes)."""
    return holds_loop(loop) and loop is not None and fetch_first(loop.where["name"].tolist())


def worker_loop(events: pd.DataFrame, loop: Loop | None) -> bool:
    """Whether the loop waits for DataLoader worker processes: a loader loop whose fetches
    are a multi-process DataLoader's (torch's `_MultiProcessingDataLoaderIter`). The
    workers make the batches in processes of their own, which the trace does not show; the
    main process's fetch is its wait for them, and how far a faster call shortens the loop
    depends on their pace, which it cannot show."""
    return loader_loop(loop) and bool(name_matches(events["name"], WORKER_FETCH).any())


@dataclass(frozen=True)
class Reference:
    """The times taken without the profiler that the replay is paced to (the module doc),
    in microseconds; None: not timed."""

    call_us: float | None = None  # the steady untraced call, its closing sync included
    between_us: float | None = None  # the least time between two untraced calls
    sync_us: float | None = None  # the closing sync's own cost, nothing to wait for
    step_us: float | None = None  # the untraced iteration, pipelined (where one was timed)
    # the recorder's block of calls after the window, per call: the untraced iteration of a
    # step without a DataLoader's loop (a loader's prefetch queue drains or fills meanwhile)
    after_window_us: float | None = None

    def iteration_us(self, loop: Loop | None) -> float | None:
        """The untraced iteration to pace to: the one timed apart (`step_us`), else the
        recorder's block after the window unless the step holds a DataLoader's loop."""
        if self.step_us is not None and self.step_us > 0:
            return self.step_us
        if self.after_window_us is not None and self.after_window_us > 0 and \
                not loader_loop(loop):
            return self.after_window_us
        return None

    def call_measure(self, call: str | None) -> list[Change]:
        """What the untraced call timed, as measure changes: the call alone (the caller's
        loop removed), ending in a sync that waits for its GPU tail; the sync's own cost is
        taken off the call's time (`call_target_us`) when it was timed, else the trace's
        wake-up after a sync stands for it."""
        alone: list[Change] = [OverlapBetweenCalls(call)] if call is not None else []
        return [*alone, SyncEachStep(0.0 if self.sync_us is not None else None)]

    @property
    def call_target_us(self) -> float | None:
        """The untraced call less its closing sync's own cost (None without a call)."""
        if self.call_us is None or self.call_us <= 0:
            return None
        return max(self.call_us - (self.sync_us or 0.0), 0.5 * self.call_us)


def host_baseline(events: pd.DataFrame, call: str | None, loop: Loop | None,
                  ref: Reference, rank: int | None = None) -> list[Change]:
    """The changes that bring the replayed step to the untraced references (module doc)."""
    if call is not None and loader_loop(loop) and loop is not None:
        return _call_then_loop(events, call, loop, ref, rank)
    iteration_us = ref.iteration_us(loop)
    if iteration_us is not None:
        return [ScaleHost(fit_host_scale(events, iteration_us, rank=rank))]
    if call is not None and holds_loop(loop) and loop is not None:
        return _call_then_loop(events, call, loop, ref, rank)
    target = ref.call_target_us
    if target is None:
        return []
    return [ScaleHost(fit_host_scale(events, target, rank=rank,
                                     measure=ref.call_measure(call)))]


def _call_then_loop(events: pd.DataFrame, call: str, loop: Loop, ref: Reference,
                    rank: int | None) -> list[Change]:
    out: list[Change] = []
    target = ref.call_target_us
    if target is not None:
        factor = fit_host_scale(events, target, rank=rank, region=call,
                                measure=ref.call_measure(call))
        out.append(ScaleHost(factor, call))
    if ref.step_us is not None and ref.step_us > 0:
        factor = fit_host_scale(events, ref.step_us, rank=rank, region=call, inside=False,
                                before=out, highest=LOOP_HIGHEST)
        out.append(ScaleHost(factor, call, inside=False))
    elif ref.between_us is not None and ref.between_us > 0 and not loader_loop(loop):
        profiled_us = float(loop.steps["between_us"].median())
        if profiled_us > 0:
            factor = min(ref.between_us / profiled_us, LOOP_HIGHEST)
            out.append(ScaleHost(factor, call, inside=False))
    return out
