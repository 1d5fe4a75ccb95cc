"""The loop around the function: each profiler step split into the call and the time between.

A decorated function's profiler step runs from one call to the next, so it holds the
caller's loop too (`for batch in loader: step(batch)`: the DataLoader's `__next__` runs
between two calls). That time is the user's, not autoprof's: autoprof's own time is only
what runs under its `autoprof::` labels. Per step:

| step | step_us | call_us | between_us | between_pct | autoprof_us |
| --- | --- | --- | --- | --- | --- |
| 2 | 14225.0 | 2480.0 | 11700.0 | 82.3 | 45.0 |

`between_us` is the step's host span outside the call less autoprof's labelled time there;
`where_between` names what the trace shows in it (the outermost traced rows, by total time:
`DataLoader.__next__`, other ops, regions, Python functions when stacks are on) and the rest
as `untraced`. `input_bound` is the verdict for a step most of which passes between calls,
with its spread over the steps and the reason a user reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME, NOT_CPU_WORK_CATS
from autoprof.analysis.metrics._tree import parent_positions
from autoprof.analysis.metrics.replay.replay import Spread
from autoprof.analysis.metrics.stats import (
    Coverage,
    cpu_mask,
    for_rank,
    isin_mask,
    step_rows,
    text_of,
)
from autoprof.analysis.metrics.sync import autoprof_mask

# most of each iteration between calls: the verdict `input-bound`
INPUT_BOUND_PCT = 50.0
UNTRACED = "untraced"


@dataclass(frozen=True)
class Loop:
    """The steps split into call and between-calls time (`steps`: the table above),
    `where` (name, us per step, pct of the time between calls), largest first."""

    steps: pd.DataFrame
    where: pd.DataFrame

    @property
    def between_pct(self) -> Spread:
        """The share of each step that passes between calls, over the steps."""
        return Spread.of(self.steps["between_pct"].tolist())


def _outermost(parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Of `rows` (ascending positions), those whose parent (a position, -1: none) is not
    one of `rows`."""
    up = parent[rows]
    at = np.minimum(np.searchsorted(rows, up), max(len(rows) - 1, 0))
    inside = (up >= 0) & (rows[at] == up) if len(rows) else np.zeros(0, dtype=bool)
    return np.asarray(rows[~inside], dtype=np.int64)


def loop_split(events: pd.DataFrame, call: str, rank: int | None = None) -> Loop:
    """Each profiler step of one rank split into the call named `call` and the rest."""
    ev = for_rank(events, rank).reset_index(drop=True)
    steps = step_rows(ev)
    cpu = cpu_mask(ev) & ~isin_mask(ev["cat"], NOT_CPU_WORK_CATS)  # not the profiler's span
    names = text_of(ev["name"])
    ts, end = ev["ts_us"].to_numpy(float), ev["end_us"].to_numpy(float)
    calls = cpu & (names == call)
    if not calls.any():
        raise ValueError(f"loop: no host row named {call!r} in the events table")
    calls_cov = Coverage(ts[calls], end[calls])
    own = autoprof_mask(ev) & cpu
    own_cov = Coverage(ts[own], end[own])
    own_spans = list(zip(ts[own].tolist(), end[own].tolist(), strict=True))
    step_span = np.zeros(len(ev), dtype=bool)
    step_span[ev.index.get_indexer(steps.index)] = True
    user = cpu & ~own & ~step_span & ~calls
    rows: list[tuple[int, float, float, float, float]] = []
    where_us: dict[str, float] = {}
    users = _UserRows(ev, user, names, calls_cov)
    step_lo, step_hi = steps["ts_us"].to_numpy(float), steps["end_us"].to_numpy(float)
    for lo, hi, number in zip(step_lo, step_hi, steps["step_no"].tolist(), strict=True):
        call_us = calls_cov.covered(lo, hi)
        outside_own = own_cov.covered(lo, hi) - _own_inside_calls(own_spans, calls_cov, lo, hi)
        between = max(hi - lo - call_us - max(outside_own, 0.0), 0.0)
        rows.append((int(number), hi - lo, call_us, between, max(outside_own, 0.0)))
    users.name_all(step_lo, step_hi, [r[3] for r in rows], where_us)
    table = pd.DataFrame(rows, columns=["step", "step_us", "call_us", "between_us",
                                        "autoprof_us"])
    table["between_pct"] = 100.0 * table["between_us"] / table["step_us"].where(
        table["step_us"] > 0)
    table["between_pct"] = table["between_pct"].fillna(0.0)
    n = max(len(table), 1)
    total = float(table["between_us"].sum())
    where = pd.DataFrame(
        [(k, v / n, 100.0 * v / total if total > 0 else 0.0)
         for k, v in sorted(where_us.items(), key=lambda kv: -kv[1])],
        columns=["name", "us", "pct"])
    return Loop(table[["step", "step_us", "call_us", "between_us", "between_pct",
                       "autoprof_us"]], where)


def _own_inside_calls(own: list[tuple[float, float]], calls: Coverage, lo: float, hi: float
                      ) -> float:
    """autoprof's labelled time (`own`: its rows' start and end) that lies inside a call
    (counted with the call)."""
    total = 0.0
    for s, e in own:
        if e > lo and s < hi:
            total += calls.covered(max(s, lo), min(e, hi))
    return total


class _UserRows:
    """The user's host rows (outside the call, autoprof's labels and the step spans) that
    lie mostly outside a call (those mostly inside one are the call's), by start, to name
    the time between calls step by step without a pass over every row."""

    def __init__(self, ev: pd.DataFrame, user: np.ndarray, names: np.ndarray,
                 calls: Coverage) -> None:
        self.ts, self.end = ev["ts_us"].to_numpy(float), ev["end_us"].to_numpy(float)
        self.names, self.parent = names, parent_positions(ev)
        pos = np.flatnonzero(user)
        lo_r, hi_r = self.ts[pos], self.end[pos]
        pos = pos[~(calls.covered_many(lo_r, hi_r) >= 0.5 * (hi_r - lo_r))]
        order = np.argsort(self.ts[pos], kind="stable")
        self.pos, self.pos_ts = pos[order], self.ts[pos][order]
        spans = self.end[pos] - self.ts[pos]
        spans = spans[np.isfinite(spans)]
        # a row reaching into [lo, hi) starts after lo less the longest row (1 us margin)
        self.longest_us = float(spans.max()) + 1.0 if len(spans) else np.inf

    def rows_in(self, lo: float, hi: float) -> np.ndarray:
        """The positions (ascending) of the user rows reaching into [lo, hi)."""
        first = int(np.searchsorted(self.pos_ts, lo - self.longest_us, "left")) \
            if np.isfinite(self.longest_us) else 0
        last = int(np.searchsorted(self.pos_ts, hi, "left"))
        near = self.pos[first:max(last, first)]
        return np.sort(near[(self.end[near] > lo) & (self.ts[near] < hi)])

    def name_all(self, lo: np.ndarray, hi: np.ndarray, between_us: list[float],
                 where_us: dict[str, float]) -> None:
        """`name_between` of each step [lo[k], hi[k]) in order; at once where the steps'
        starts and ends both ascend (each row then reaches into a run of steps)."""
        if not (len(lo) and np.all(np.diff(lo) >= 0) and np.all(np.diff(hi) >= 0)):
            for k in range(len(lo)):  # NaN fails the tests above too
                self.name_between(lo[k], hi[k], between_us[k], where_us)
            return
        step, rows = self._outermost_pairs(lo, hi)
        us = np.maximum(np.minimum(self.end[rows], hi[step])
                        - np.maximum(self.ts[rows], lo[step]), 0.0).tolist()
        at = np.searchsorted(step, np.arange(len(lo) + 1)).tolist()
        names = [self._name(r) for r in rows.tolist()]
        for k, between in enumerate(between_us):
            traced = 0.0
            for j in range(at[k], at[k + 1]):
                where_us[names[j]] = where_us.get(names[j], 0.0) + us[j]
                traced += us[j]
            rest = max(between - traced, 0.0)
            if rest > 0:
                where_us[UNTRACED] = where_us.get(UNTRACED, 0.0) + rest

    def _name(self, r: int) -> str:
        name = str(self.names[r])
        return "DataLoader.__next__" if DATA_LOADER_NAME.search(name) else name

    def _reaches(self, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Whether each row reaches into its step's [lo, hi), as `rows_in` finds it."""
        ts = self.ts[rows]
        out: np.ndarray = (self.end[rows] > lo) & (ts < hi)
        if np.isfinite(self.longest_us):
            out &= ts >= lo - self.longest_us
        return out

    def _outermost_pairs(self, lo: np.ndarray, hi: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
        """(step, row) of the outermost user rows of each step (`name_between`'s), by step
        then row; the steps' starts and ends ascend."""
        pos = self.pos
        first = np.searchsorted(hi, self.ts[pos], "right")  # the first step ending after ts
        stop = np.searchsorted(lo, self.end[pos], "left")  # the steps starting before end
        count = np.where(np.isnan(self.ts[pos]) | np.isnan(self.end[pos]), 0,
                         np.maximum(stop - first, 0))
        rows = np.repeat(pos, count)
        offset = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
        step = np.repeat(first, count) + offset
        keep = self._reaches(rows, lo[step], hi[step])
        step, rows = step[keep], rows[keep]
        kept = np.zeros(len(self.ts), dtype=bool)
        kept[pos] = True
        up = self.parent[rows]
        inner = (up >= 0) & kept[np.clip(up, 0, None)]
        inner[inner] = self._reaches(up[inner], lo[step[inner]], hi[step[inner]])
        order = np.lexsort((rows[~inner], step[~inner]))
        return step[~inner][order], rows[~inner][order]

    def name_between(self, lo: float, hi: float, between_us: float,
                     where_us: dict[str, float]) -> None:
        """Add to `where_us` the time of the outermost user rows of [lo, hi) outside the
        call, the rest as untraced."""
        ts, end, names = self.ts, self.end, self.names
        rows = self.rows_in(lo, hi)
        traced = 0.0
        for r in _outermost(self.parent, rows).tolist():
            us = max(min(end[r], hi) - max(ts[r], lo), 0.0)
            name = "DataLoader.__next__" if DATA_LOADER_NAME.search(names[r]) else names[r]
            where_us[name] = where_us.get(name, 0.0) + us
            traced += us
        rest = max(between_us - traced, 0.0)
        if rest > 0:
            where_us[UNTRACED] = where_us.get(UNTRACED, 0.0) + rest


@dataclass(frozen=True)
class InputBound:
    """The verdict `input-bound` when it holds: the share between calls (its spread), where
    that time goes, and the reason."""

    between_pct: Spread
    where: str
    reason: str


def input_bound(loop: Loop) -> InputBound | None:
    """`input-bound` when the median step spends INPUT_BOUND_PCT or more between calls; the
    reason says so when some steps fall on the other side (a rerun could give another
    verdict)."""
    share = loop.between_pct
    if not len(loop.steps) or share.median < INPUT_BOUND_PCT:
        return None
    top = loop.where.iloc[0]["name"] if len(loop.where) else UNTRACED
    where = where_text(str(top))
    return InputBound(share, where, input_bound_reason(share, where, True))


def where_text(top: str) -> str:
    """How a reason names the largest part of the time between calls."""
    return "untraced code of the caller's loop" if top == UNTRACED else top


def input_bound_reason(share: Spread, where: str, has_gpu: bool) -> str:
    """The reason of an `input-bound` verdict: the share between calls, where, what waits,
    and the spread when steps fall on both sides of INPUT_BOUND_PCT."""
    if not has_gpu:
        waits = "the caller's loop, not the function, takes most of each iteration"
    elif where == "DataLoader.__next__":
        waits = "the GPU waits for the next batch"
    else:
        waits = "the GPU waits for the caller's loop"
    reason = f"{share.median:.0f}% of each iteration passes between calls, in {where}: {waits}"
    if share.low < INPUT_BOUND_PCT:
        reason += (f" (mixed across steps: {share.low:.0f}-{share.high:.0f}% between calls; "
                   "a rerun could give another verdict)")
    return reason
