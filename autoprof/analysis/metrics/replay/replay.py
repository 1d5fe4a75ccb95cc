"""Replayed step times, predicted speedups and the replay's own error, per profiler step.

A step's window is measured and replayed the same way: from the later of its host start and
the previous step's end, to the later of its host end and the end of the last GPU work it
launched (so a GPU tail is counted once, in the step that launched it).

| step | step_us | measured_step_us | host_busy_us | gpu_busy_us |
| --- | --- | --- | --- | --- |
| 2 | 72.1 | 71.8 | 70.0 | 2.8 |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.replay.changes import Change, ScaleHost
from autoprof.analysis.metrics.replay.crossing import crossing
from autoprof.analysis.metrics.replay.graph import Graph, graph_of
from autoprof.analysis.metrics.replay.simulate import (
    Calibration,
    Plan,
    Timeline,
    calibrate,
    measured,
    simulate,
)
from autoprof.analysis.metrics.replay.transform import apply_changes
from autoprof.analysis.metrics.replay.waits import END, START
from autoprof.analysis.metrics.stats import union_length


@dataclass(frozen=True)
class ReplayResult:
    """One step replayed: `step_us` (replayed window), `measured_step_us` (the trace's),
    `host_busy_us` (the main thread's replayed time not spent waiting for the GPU),
    `gpu_busy_us` (union of the step's replayed GPU work)."""

    step: int
    step_us: float
    measured_step_us: float
    host_busy_us: float
    gpu_busy_us: float

    @property
    def error_pct(self) -> float:
        """Replayed minus measured, in percent of measured."""
        if self.measured_step_us <= 0:
            return 0.0
        return 100.0 * (self.step_us - self.measured_step_us) / self.measured_step_us


@dataclass(frozen=True)
class Spread:
    """A number over the steps: median, quartiles, min and max, and each step's value."""

    median: float
    q1: float
    q3: float
    low: float
    high: float
    per_step: tuple[float, ...]

    @staticmethod
    def of(values: Sequence[float]) -> Spread:
        arr = np.asarray(values, float)
        if not len(arr):
            nan = float("nan")
            return Spread(nan, nan, nan, nan, nan, ())
        q1, med, q3 = (float(v) for v in np.quantile(arr, [0.25, 0.5, 0.75]))
        return Spread(med, q1, q3, float(arr.min()), float(arr.max()), tuple(arr.tolist()))

    def to_json(self) -> dict[str, float]:
        """The summary's ``predicted_spread``: median, quartiles, min and max."""
        return {"median": self.median, "q1": self.q1, "q3": self.q3, "min": self.low,
                "max": self.high}


def _windows(g: Graph, t: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of every step's window on timeline `t`."""
    n = len(g.steps)
    host_start = np.full(n, np.nan)
    host_end = np.full(n, np.nan)
    starts = g.call_kind == START
    ends = g.call_kind == END
    host_start[g.call_step[starts]] = t.call_start_us[starts]
    host_end[g.call_step[ends]] = t.call_end_us[ends]
    gpu_end = np.full(n, -np.inf)
    replayed = g.item_call >= 0
    np.maximum.at(gpu_end, g.call_step[g.item_call[replayed]], t.item_end_us[replayed])
    end = np.maximum(host_end, gpu_end)
    prev = np.concatenate([[-np.inf], np.maximum.accumulate(end)[:-1]])
    start = np.maximum(host_start, prev)
    return start, np.maximum(end, start)


def _step_groups(g: Graph) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per step, in index order: its main-thread calls and its replayed items (sorted once
    per graph: a step's rows are read as one slice, not a mask over the whole trace)."""
    if "step_calls" not in g.memo:
        main = np.where(g.call_thread == g.main_thread, g.call_step, -1)
        replayed = g.item_call >= 0
        items = np.where(replayed, g.call_step[np.clip(g.item_call, 0, None)], -1)
        g.memo["step_calls"] = np.argsort(main, kind="stable")
        g.memo["step_call_bounds"] = np.searchsorted(main[g.memo["step_calls"]],
                                                     np.arange(len(g.steps) + 1))
        g.memo["step_items"] = np.argsort(items, kind="stable")
        g.memo["step_item_bounds"] = np.searchsorted(items[g.memo["step_items"]],
                                                     np.arange(len(g.steps) + 1))
    return (_slices(g.memo["step_calls"], g.memo["step_call_bounds"]),
            _slices(g.memo["step_items"], g.memo["step_item_bounds"]))


def _slices(order: np.ndarray, bounds: np.ndarray) -> list[np.ndarray]:
    """The indices of each group k, ascending: order[bounds[k]:bounds[k + 1]]."""
    at = bounds.tolist()
    return [order[at[k]:at[k + 1]] for k in range(len(at) - 1)]


def _host_busy(t: Timeline, plan_cost: np.ndarray, main: np.ndarray, lo: float,
               hi: float) -> float:
    """The step's host busy time: its window less the time its main-thread calls (`main`)
    spent waiting beyond their own cost."""
    waiting = np.sum(np.maximum(t.call_end_us[main] - t.call_start_us[main]
                                - plan_cost[main], 0.0))
    return max(hi - lo - float(waiting), 0.0)


def _results(g: Graph, t: Timeline, plan: Plan) -> list[ReplayResult]:
    plan_cost = plan.call_cost_us
    start, end = _windows(g, t)
    m_start, m_end = _windows(g, measured(g))
    calls_of, items_of = _step_groups(g)
    out = []
    reported = [True] * len(g.steps) if g.reported is None else g.reported.tolist()
    for k, number in enumerate(g.steps.tolist()):
        if not reported[k]:
            continue  # a sample's lead-in step (sample.py)
        mine = items_of[k]
        out.append(ReplayResult(
            step=int(number), step_us=max(float(end[k] - start[k]),
                                          float(plan.step_floor_us[k])),
            measured_step_us=float(m_end[k] - m_start[k]),
            host_busy_us=_host_busy(t, plan_cost, calls_of[k], float(start[k]),
                                    float(end[k])),
            gpu_busy_us=union_length(t.item_start_us[mine], t.item_end_us[mine])))
    return out


def _calibrated(g: Graph, calibration: Calibration) -> Plan:
    """`calibrate(g, calibration)`, made once per graph (`apply_changes` edits a copy)."""
    key = f"calibrated|{calibration}"
    plan = g.kept.get(key)
    if not isinstance(plan, Plan):
        plan = g.kept[key] = calibrate(g, calibration)
    return plan


def _baseline(g: Graph, calibration: Calibration, baseline: Sequence[Change]
              ) -> tuple[Plan, list[ReplayResult]]:
    """The plan with `baseline` applied and its replayed steps, made once per graph and
    baseline: every fix's prediction compares against the same one (the changes are frozen
    dataclasses, so their repr names every field)."""
    key = f"baseline|{calibration}|{tuple(baseline)!r}"
    kept = g.kept.get(key)
    if not isinstance(kept, tuple):
        plan = apply_changes(g, _calibrated(g, calibration), baseline)
        kept = g.kept[key] = (plan, _results(g, simulate(g, plan), plan))
    return cast(tuple[Plan, list[ReplayResult]], kept)


def replay_steps(events: pd.DataFrame, changes: Sequence[Change] = (), *,
                 rank: int | None = None, calibration: Calibration = "median"
                 ) -> list[ReplayResult]:
    """Every profiled step of one rank replayed with `changes` applied, in step order."""
    g = graph_of(events, rank)
    plan = apply_changes(g, _calibrated(g, calibration), changes)
    return _results(g, simulate(g, plan), plan)


def replay_step(events: pd.DataFrame, step: int, changes: Sequence[Change] = (), *,
                rank: int | None = None, calibration: Calibration = "median"
                ) -> ReplayResult:
    """One profiler step (its number, `ProfilerStep#<step>`) replayed with `changes`."""
    for result in replay_steps(events, changes, rank=rank, calibration=calibration):
        if result.step == step:
            return result
    raise ValueError(f"replay: no profiler step {step} in the events table")


def _speedups(events: pd.DataFrame, changes: Sequence[Change], rank: int | None,
              calibration: Calibration, baseline: Sequence[Change]
              ) -> list[tuple[int, float]]:
    g = graph_of(events, rank)
    base_plan, base = _baseline(g, calibration, baseline)
    plan = apply_changes(g, base_plan, changes)
    changed = _results(g, simulate(g, plan), plan)
    return [(b.step, b.step_us / c.step_us if c.step_us > 0 else float("nan"))
            for b, c in zip(base, changed, strict=True)]


def predict_speedup(events: pd.DataFrame, step: int, changes: Sequence[Change], *,
                    rank: int | None = None, calibration: Calibration = "median",
                    baseline: Sequence[Change] = ()) -> float:
    """The unchanged replay's step time over the changed replay's, for one step (the
    replay's own error cancels to first order). `baseline`: changes applied to both sides
    first (a `ScaleHost` from `fit_host_scale`, to predict against the untraced step)."""
    for number, speedup in _speedups(events, changes, rank, calibration, baseline):
        if number == step:
            return speedup
    raise ValueError(f"replay: no profiler step {step} in the events table")


def predict_speedups(events: pd.DataFrame, changes: Sequence[Change], *,
                     rank: int | None = None, calibration: Calibration = "median",
                     baseline: Sequence[Change] = ()) -> Spread:
    """`predict_speedup` over every step: median, quartiles, min and max."""
    return Spread.of([s for _, s in _speedups(events, changes, rank, calibration,
                                              baseline)])


def replay_error(events: pd.DataFrame, *, rank: int | None = None,
                 calibration: Calibration = "median") -> Spread:
    """The unchanged replay's error per step, in percent of the measured step time."""
    return Spread.of([r.error_pct for r in replay_steps(events, rank=rank,
                                                          calibration=calibration)])


def fit_host_scale(events: pd.DataFrame, untraced_step_us: float, *, rank: int | None = None,
                   calibration: Calibration = "median", tolerance: float = 1e-4,
                   region: str | None = None, inside: bool = True,
                   before: Sequence[Change] = (), measure: Sequence[Change] = (),
                   highest: float = 1.0) -> float:
    """The `ScaleHost` factor (in (0, `highest`]) at which the replayed median step time
    equals `untraced_step_us`, the step timed without the profiler (a warm-up call, a wait
    step): how much of the profiled host time is the profiler's. `region` and `inside` say
    which host time is scaled (`ScaleHost`); `before`: changes applied first and kept (a scale
    already fitted); `measure`: changes applied after the scale only to time what the
    reference timed (the caller's loop removed, to time the call alone). `highest` when even
    that scale is too fast (1.0 by default: the profiler never makes the host faster); the
    smallest factor tried when even a free host is slower (the GPU side bounds the step).
    The factor is the one halving its interval until that is under `tolerance` times
    `highest` would find (14 replays at the default, each of the whole trace), found from
    about five replays (`crossing.py`)."""
    g = graph_of(events, rank)
    base = apply_changes(g, _calibrated(g, calibration), before)

    def median_step_us(factor: float) -> float:
        plan = apply_changes(g, base, [ScaleHost(factor, region, inside), *measure])
        return float(np.median([r.step_us for r in _results(g, simulate(g, plan), plan)]))

    factor, _ = crossing(median_step_us, untraced_step_us, highest, tolerance)
    return factor
