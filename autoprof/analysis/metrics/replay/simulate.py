"""The replay: the graph's calls in measured order, each thread and stream on its own clock.

A `Plan` holds the numbers the simulator reads: each call's own host cost and the host time
before it, each sync's waits and wake-up, each GPU item's duration, launch latency and gap
behind the previous item on its stream. `calibrate` fills it from the measured trace;
`transform.apply_changes` edits a copy.

The rules (times on the replayed clock):
- a call starts `gap_us` after the previous call of its thread ends; on a thread other than
  the one running the steps (autograd's backward thread) that is only the time spent in its
  own traced rows (the rest is idle), and the call also starts no earlier than the main
  thread's latest replayed call end plus the measured time since it, scaled as the main
  thread's next stretch of host time is (the hand-off: backward starts when the main thread
  asks for it, and runs faster when the host does);
- a main-thread call after a burst of another thread's calls that filled most of the stretch
  before it starts no earlier than that burst's replayed end plus the measured time after it,
  scaled the same way (the join: the main thread waits for backward to finish);
- a launch's GPU item starts at max(launch end + latency, the end of its latest
  predecessor (the previous item on its stream, the items it waits for through an event)
  + gap), never before its call;
- a sync ends at max(its start + its own cost, the end of what it waits for + wake-up);
- compute kernels of several streams that run at once more than in the trace share the
  GPU (processor sharing, `contention.py`): each is stretched by what it loses beyond its
  measured overlap, and the replay runs again until the durations settle.

Calibration (`Calibration`):
- "median": one launch latency (the median over items that found their stream idle), one
  stream gap (the median over items queued behind another) and one wake-up (the median over
  syncs that waited) per trace: the model's own error shows in the unchanged replay;
- "per_item": each item's and sync's own measured values wherever they bind, so the
  unchanged replay reproduces the trace (what changed predictions are made from).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

import numpy as np

from autoprof.analysis.metrics.replay.contention import (
    ITERATIONS,
    SETTLED_US,
    compute_items,
    lost_us,
    overlaps,
)
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.waits import LAUNCH

Calibration = Literal["median", "per_item"]
# A main-thread call joins another thread's burst when the burst fills this share of the
# host stretch before the call (the main thread blocked in backward, not working beside a
# pin-memory thread).
JOIN_SHARE = 0.5


@dataclass
class Plan:
    """The costs and waits one replay uses (arrays indexed as the graph's)."""

    call_cost_us: np.ndarray
    call_gap_us: np.ndarray
    base_gap_us: np.ndarray  # the calibrated `call_gap_us`, which changes scale
    call_wake_us: np.ndarray
    call_waits: list[Sequence[int]]  # a call's waits are replaced, never changed: copies share
    item_dur_us: np.ndarray
    item_latency_us: np.ndarray
    item_gap_us: np.ndarray
    latency_us: float  # the trace's median launch latency
    launch_us: float  # the trace's median host cost of a launch
    step_floor_us: np.ndarray  # per step: the least it can take (a loader's throughput)
    # per call: the pace (a ScaleHost's factor) of its host stretch inside `pace_region`'s
    # spans and outside them (one pace for the whole stretch without a region)
    pace_in: np.ndarray
    pace_out: np.ndarray
    pace_region: str | None = None

    def copy(self) -> Plan:
        return replace(self, call_cost_us=self.call_cost_us.copy(),
                       step_floor_us=self.step_floor_us.copy(),
                       pace_in=self.pace_in.copy(), pace_out=self.pace_out.copy(),
                       call_gap_us=self.call_gap_us.copy(),
                       call_wake_us=self.call_wake_us.copy(),
                       call_waits=list(self.call_waits),  # its lists: replaced only
                       item_dur_us=self.item_dur_us.copy(),
                       item_latency_us=self.item_latency_us.copy(),
                       item_gap_us=self.item_gap_us.copy())


@dataclass(frozen=True)
class Timeline:
    """Replayed (or measured) start and end of every call and GPU item."""

    call_start_us: np.ndarray
    call_end_us: np.ndarray
    item_start_us: np.ndarray
    item_end_us: np.ndarray


def _median(values: np.ndarray, default: float) -> float:
    values = values[np.isfinite(values)]
    return float(np.median(values)) if len(values) else default


def measured(g: Graph) -> Timeline:
    """The trace's own times, as a Timeline."""
    return Timeline(g.call_ts_us, g.call_ts_us + g.call_dur_us, g.item_ts_us,
                    g.item_ts_us + g.item_dur_us)


def _item_terms(g: Graph, cost_us: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item: measured latency after its launch's end (the call's start plus its own
    cost: a sync's wait is not part of it), gap after its latest predecessor (the previous
    item on its stream, or an item it waits for through an event; NaN without one), and
    whether it was queued (a predecessor was still running when the launch returned)."""
    call_end = g.call_ts_us + cost_us
    launch_end = np.where(g.item_call >= 0, call_end[np.clip(g.item_call, 0, None)], np.nan)
    item_end = g.item_ts_us + g.item_dur_us
    before = _before_on_stream(g.item_stream)
    last = np.where(before >= 0, item_end[np.clip(before, 0, None)], -np.inf)
    ends: list[float] = item_end.tolist()
    deps = np.full(g.n_items, -np.inf)
    for i, deps_of in enumerate(g.item_deps):
        if deps_of:
            deps[i] = max([ends[d] for d in deps_of])
    prev_end = np.where(deps > last, deps, last)  # max(last, deps), as Python's max picks
    latency = g.item_ts_us - launch_end
    gap = np.where(np.isfinite(prev_end), g.item_ts_us - prev_end, np.nan)
    return latency, gap, prev_end > launch_end


def calibrate(g: Graph, mode: Calibration = "median") -> Plan:
    """The plan that replays the trace as measured (`mode`: see the module docstring)."""
    launches = g.call_dur_us[(g.call_kind == LAUNCH) & ~g.call_is_sync]
    launch_med = _median(launches, 0.0)
    cost, wake = _sync_terms(g, mode, launch_med)
    latency, gap, queued = _item_terms(g, cost)
    replayed = g.item_call >= 0
    # work that starts in the first half of its call (a pageable copy staged while the call
    # runs, a copy the host waits for) keeps its own offset: it is not a launch latency
    call = np.clip(g.item_call, 0, None)
    in_call = replayed & ((latency < -0.5 * cost[call]) | g.call_is_sync[call])
    free = replayed & ~queued & ~in_call
    # no item found its stream idle: the latency is at most the smallest one seen
    lat_med = _median(latency[free], 0.0) if free.any() else \
        max(float(np.min(latency[replayed], initial=np.inf)), 0.0) if replayed.any() else 0.0
    gap_med = max(_median(gap[replayed & queued], 0.0), 0.0)
    if mode == "per_item":
        item_lat = np.where(queued, np.minimum(lat_med, latency), latency)
        item_gap = np.where(queued, gap, np.minimum(gap_med, np.nan_to_num(gap, nan=0.0)))
    else:
        item_lat = np.where(in_call & ~g.call_is_sync[call], latency, lat_med)
        item_gap = np.full(g.n_items, gap_med)
    gap = g.busy_gap_us()
    return Plan(call_cost_us=cost, call_gap_us=gap, base_gap_us=gap.copy(), call_wake_us=wake,
                call_waits=list(g.call_waits),  # lists replaced, never changed
                item_dur_us=g.item_dur_us.copy(), item_latency_us=np.nan_to_num(item_lat),
                item_gap_us=np.nan_to_num(item_gap), latency_us=lat_med, launch_us=launch_med,
                step_floor_us=np.zeros(len(g.steps)), pace_in=np.ones(g.n_calls),
                pace_out=np.ones(g.n_calls))


def _sync_terms(g: Graph, mode: Calibration, launch_med: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each call's own (non-waiting) cost and each sync's wake-up after what it waited for."""
    item_end = g.item_ts_us + g.item_dur_us
    end = g.call_ts_us + g.call_dur_us
    ends: list[float] = item_end.tolist()
    awaited = np.array([max([ends[i] for i in w]) if w else -np.inf for w in g.call_waits],
                       dtype=float).reshape(g.n_calls)
    has = np.isfinite(awaited)
    waited = has & (awaited > g.call_ts_us)
    idle = has & ~waited
    own_med = _median(g.call_dur_us[idle], launch_med) if idle.any() else launch_med
    wake_item = np.where(waited, end - awaited, 0.0)
    wake_med = _median(wake_item[waited], 0.0)
    cost = np.where(waited, np.minimum(g.call_dur_us, own_med), g.call_dur_us)
    if mode == "per_item":
        slack = np.where(idle, end - awaited, 0.0)  # a wake-up that would not have bound
        wake = np.where(waited, wake_item, np.minimum(wake_med, slack))
    else:
        wake = np.full(g.n_calls, wake_med)
    return cost, np.maximum(wake, 0.0)


def _main_neighbours(g: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call: the latest main-thread call before it, the next main-thread call at or after
    it (-1: none), and for a main-thread call the last call of a joined burst (-1: none)."""
    main = g.call_thread == g.main_thread
    idx = np.arange(g.n_calls)
    last = np.where(main, idx, -1)
    prev_main = np.concatenate([[-1], np.maximum.accumulate(last)[:-1]])
    nxt = np.where(main, idx, g.n_calls)
    next_main = np.minimum.accumulate(nxt[::-1])[::-1]
    next_main = np.where(next_main >= g.n_calls, -1, next_main)
    joined = np.full(g.n_calls, -1)
    for c in np.flatnonzero(main).tolist():
        p = int(prev_main[c])
        if p < 0 or c - p < 2:
            continue
        first, lst = p + 1, c - 1
        stretch = g.call_ts_us[c] - (g.call_ts_us[p] + g.call_dur_us[p])
        burst = g.call_ts_us[lst] + g.call_dur_us[lst] - g.call_ts_us[first]
        if stretch > 0 and burst >= JOIN_SHARE * stretch:
            joined[c] = lst
    return prev_main, next_main, joined


def simulate(g: Graph, plan: Plan) -> Timeline:
    """Replay the graph under `plan` (the rules in the module docstring), with compute
    kernels that overlap more than in the trace stretched by processor sharing
    (`contention.py`) until their durations settle."""
    t = _replay(g, plan)
    if "contending" not in g.memo:  # the same items in every replay of the graph
        g.memo["contending"] = compute_items(g.names()[g.item_row], g.item_cats()) & \
            (g.item_call >= 0)
    mine = g.memo["contending"]
    if "contend_streams" not in g.memo:  # whether they span two streams: the same each time
        g.memo["contend_streams"] = np.array(overlaps(g.item_stream[mine]))
    if not g.memo["contend_streams"]:
        return t
    measured_lost = lost_us(g.item_ts_us[mine], g.item_ts_us[mine] + g.item_dur_us[mine])
    base = plan.item_dur_us[mine]
    current = base.copy()
    for _ in range(ITERATIONS):
        lost = lost_us(t.item_start_us[mine], t.item_end_us[mine])
        stretched = base + np.maximum(lost - measured_lost, 0.0)
        if float(np.max(np.abs(stretched - current), initial=0.0)) < SETTLED_US:
            break
        current = stretched
        durations = plan.item_dur_us.copy()
        durations[mine] = current
        t = _replay(g, replace(plan, item_dur_us=durations))
    return t


def _replay(g: Graph, plan: Plan) -> Timeline:
    """One pass of the replay with the plan's durations as they are."""
    return _Pass(g, plan).run()


def _neighbours(g: Graph) -> list[list[int]]:
    """`_main_neighbours` as lists (found once per graph: every replay reads them)."""
    if "main_neighbours" not in g.memo:
        g.memo["main_neighbours"] = np.stack(_main_neighbours(g))
    out: list[list[int]] = g.memo["main_neighbours"].tolist()
    return out


class _Fixed(NamedTuple):
    """The graph's own numbers a pass reads, as lists (the same in every replay)."""

    thread: list[int]
    ts: list[float]
    measured_end: list[float]
    neighbours: list[list[int]]
    before_on_stream: list[int]
    item_ts: list[float]
    reads_ratio: bool  # a join, or a thread other than the main one


def _fixed(g: Graph) -> _Fixed:
    """`_Fixed` of `g`, made once per graph."""
    fixed = g.kept.get("pass_lists")
    if not isinstance(fixed, _Fixed):
        neighbours = _neighbours(g)  # kept in g.memo["main_neighbours"] as an array
        joins = bool(np.any(g.memo["main_neighbours"][2] >= 0))
        fixed = g.kept["pass_lists"] = _Fixed(
            g.call_thread.tolist(), g.call_ts_us.tolist(),
            (g.call_ts_us + g.call_dur_us).tolist(), neighbours,
            _before_on_stream(g.item_stream).tolist(), g.item_ts_us.tolist(),
            joins or bool(np.any(g.call_thread != g.main_thread)))
    return fixed


def _before_on_stream(stream: np.ndarray) -> np.ndarray:
    """Per item, the item queued just before it on its stream (-1: none). A pass takes the
    items in index order (the carry first, then each call's consecutive items in call
    order), so that is the previous index on the same stream."""
    order = np.argsort(stream, kind="stable")
    same = np.r_[False, stream[order][1:] == stream[order][:-1]]
    out = np.full(len(stream), -1, dtype=np.int64)
    out[order[same]] = order[np.flatnonzero(same) - 1]
    return out


class _Pass:
    """One replay pass over plain lists (one element of each array is read per call or
    item, where numpy's per-element access would cost more than the arithmetic)."""

    def __init__(self, g: Graph, plan: Plan) -> None:
        fixed = _fixed(g)
        self.main = g.main_thread
        self.thread, self.ts, self.measured_end = fixed.thread, fixed.ts, fixed.measured_end
        self.gap: list[float] = plan.call_gap_us.tolist()
        self.cost: list[float] = plan.call_cost_us.tolist()
        self.wake = plan.call_wake_us  # read only at the few calls that wait
        self.waits = plan.call_waits
        # how the replay scales the host stretch before each call (1.0: as measured), read
        # only by joins and other threads' calls
        self.ratio: list[float] = []
        if fixed.reads_ratio:
            base = plan.base_gap_us
            scaled = base > 1e-9
            self.ratio = np.where(scaled, plan.call_gap_us / np.where(scaled, base, 1.0),
                                  1.0).tolist()
        self.prev_main, self.next_main, self.joined = fixed.neighbours
        self.items = g.call_items
        self.before_on_stream = fixed.before_on_stream
        self.deps = g.item_deps
        self.latency: list[float] = plan.item_latency_us.tolist()
        self.item_gap: list[float] = plan.item_gap_us.tolist()
        self.dur: list[float] = plan.item_dur_us.tolist()
        self.item_start = list(fixed.item_ts)  # written by the pass
        item_end = g.item_ts_us + plan.item_dur_us
        carry = np.flatnonzero(g.item_call < 0)  # the carry keeps its measured times
        item_end[carry] = g.item_ts_us[carry] + g.item_dur_us[carry]
        self.item_end: list[float] = item_end.tolist()
        self.call_end = [0.0] * g.n_calls

    def run(self) -> Timeline:
        clock: dict[int, float] = {}
        call_start = [0.0] * len(self.thread)
        call_end = self.call_end
        item_start, item_end, queued_after = self.item_start, self.item_end, \
            self.before_on_stream
        deps, latency = self.deps, self.latency
        gap, dur, cost, wake = self.item_gap, self.dur, self.cost, self.wake
        main, joined, ts, measured_end, ratio, call_gap = (
            self.main, self.joined, self.ts, self.measured_end, self.ratio, self.gap)
        start_of, calls = self._start, zip(self.thread, self.items, self.waits, strict=True)
        no_wait = -np.inf
        main_clock, main_started = 0.0, False  # the main thread's clock, kept apart
        for c, (th, items, waits) in enumerate(calls):
            if th == main and main_started:  # `_start`'s most common case, inline
                start = main_clock + call_gap[c]
                j = joined[c]
                if j >= 0:
                    after = (ts[c] - measured_end[j]) * ratio[c]
                    start = max(start, call_end[j] + max(after, 0.0))
            else:
                start = start_of(c, th, clock)
            done = launch_end = start + cost[c]
            # each item launched (the rules in the module doc), inline: one per launch call.
            # `b if b > a else a` is max(a, b) (the first of equals, NaN kept as max keeps it)
            for i in items:
                at = launch_end + latency[i]
                at = start if start > at else at  # never before its call
                waits_for = deps[i]
                before = max([item_end[d] for d in waits_for]) if waits_for else no_wait
                last = queued_after[i]  # the previous item on its stream
                if last >= 0:
                    end = item_end[last]
                    before = end if end > before else before
                queued = before + gap[i]
                at = queued if queued > at else at
                item_start[i], item_end[i] = at, at + dur[i]
            if waits:
                done = max(done, max(item_end[w] for w in waits) + float(wake[c]))
            call_start[c], call_end[c] = start, done
            if th == main:
                main_clock, main_started = done, True
            else:
                clock[th] = done
        return Timeline(np.asarray(call_start, float), np.asarray(call_end, float),
                        np.asarray(item_start, float), np.asarray(item_end, float))

    def _start(self, c: int, th: int, clock: dict[int, float]) -> float:
        """When call `c` starts on the replayed clock (the rules in the module docstring)."""
        own = clock[th] + self.gap[c] if th in clock else None
        if th == self.main:
            if own is None:
                return self.ts[c]
            j = self.joined[c]
            if j >= 0:
                after = (self.ts[c] - self.measured_end[j]) * self.ratio[c]
                own = max(own, self.call_end[j] + max(after, 0.0))
            return own
        p = self.prev_main[c]
        if p < 0:
            anchor = self.ts[c]
        else:
            n = self.next_main[c]
            since = self.ts[c] - self.measured_end[p]
            anchor = self.call_end[p] + since * (self.ratio[n] if n >= 0 else 1.0)
        return anchor if own is None else max(own, anchor)
