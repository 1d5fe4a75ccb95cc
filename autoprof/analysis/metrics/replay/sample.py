"""The steps a long trace is replayed over: at most MAX_STEPS, spread evenly over the trace,
each replayed after the step before it.

A prediction is the median (and spread) over steps of one replay's step time over another's,
and each replay is one pass over every call and GPU item of the graph: a trace of 500 steps
costs 500 steps a replay, and a summary makes about twenty. `sampled` cuts one rank's table to
`MAX_STEPS // BLOCK_STEPS` blocks of BLOCK_STEPS consecutive profiler steps, the first block at
the trace's first step, the last ending at its last step, the others evenly between. A rank
with no more steps than the sample would replay, lead-ins included (`replayed_steps`: 64 for
32 single steps) is replayed whole (the same table, so the same predictions):

| profiler steps | reported (positions, 1-based) | lead-ins |
| --- | --- | --- |
| 1 to 64 | all | none |
| 500 | 1, 17, 33, 49, 65, 81, 98, ..., 484, 500 (32) | the step before each but the first |

Each block after the first is replayed from the step before it, a lead-in whose result is not
reported: it fills the streams' queues as the steps before it did, so the block's first step
starts as it would in the whole trace's replay. A block keeps the rows that start inside its
steps' span on any thread, the GPU work those rows launched (wherever it runs), the rows that
hold the whole span (the call or loop around the steps, so parents stay parents) and the GPU
rows without a launch that start inside it. Between two blocks the replay sees the host time
of the steps left out as time between two steps (in no step's window) and no GPU work.

Blocks of one step: on the committed 12-step H200 runs sampled to 4 steps, single steps
were never the worst of the block lengths tried, and they spread over the whole trace, where
a few blocks would miss a phase a long run goes through (docs/performance.md); they cost a
lead-in each.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import cpu_mask, for_rank, ranks_of, step_rows

MAX_STEPS = 32  # the most profiler steps of one rank a sampled replay reports
BLOCK_STEPS = 1  # consecutive steps a block keeps (module doc: why one)


def block_starts(n_steps: int, max_steps: int = MAX_STEPS,
                 block_steps: int = BLOCK_STEPS) -> list[int]:
    """The position of each block's first step (0-based, ascending) among `n_steps` steps;
    every position when there are `max_steps` or fewer (blocks of one step)."""
    if n_steps <= max_steps:
        return list(range(n_steps))
    size = max(min(block_steps, max_steps), 1)
    blocks = max(max_steps // size, 1)
    if blocks == 1:
        return [(n_steps - size) // 2]
    return sorted({int(round(k * (n_steps - size) / (blocks - 1))) for k in range(blocks)})


def replayed_steps(max_steps: int = MAX_STEPS, block_steps: int = BLOCK_STEPS) -> int:
    """The most steps a sample replays, its lead-ins included: a rank of no more steps is
    replayed whole."""
    size = max(min(block_steps, max_steps), 1)
    return max(max_steps // size, 1) * (size + 1)


def sampled(events: pd.DataFrame, rank: int | None = None, max_steps: int = MAX_STEPS,
            block_steps: int | None = None) -> tuple[pd.DataFrame, frozenset[int]]:
    """The rows of `rank` (None: the only or first) that the replay of at most `max_steps`
    of its profiler steps reads (the module doc), in blocks of `block_steps` (None:
    BLOCK_STEPS), and the numbers of the lead-in steps among them (replayed, not reported);
    `events` itself and no lead-in when the rank has no more steps than the sample would
    replay (`replayed_steps`), or there is no rank."""
    ranks = ranks_of(events)
    if not ranks:
        return events, frozenset()
    wanted = ranks[0] if rank is None else rank
    steps = step_rows(events)
    steps = steps[steps["rank"].to_numpy() == wanted]
    size = max(min(BLOCK_STEPS if block_steps is None else block_steps, max_steps), 1)
    if len(steps) <= replayed_steps(max_steps, size):
        return events, frozenset()
    ev = events if ranks == [wanted] else for_rank(events, wanted)
    starts = block_starts(len(steps), max_steps, size)
    leads = [k - 1 for k in starts if k > 0]  # more steps than replayed: blocks never touch
    first = steps["ts_us"].to_numpy(float)
    last = steps["end_us"].to_numpy(float)
    lo = np.array([first[k - 1 if k > 0 else k] for k in starts])
    hi = np.array([last[k + size - 1] for k in starts])
    numbers = steps["step_no"].to_numpy(np.int64)
    return ev[_kept(ev, lo, hi)], frozenset(int(numbers[k]) for k in leads)


def _kept(ev: pd.DataFrame, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The rows a replay of the spans [lo, hi) reads (the module doc), as a mask."""
    ts = ev["ts_us"].to_numpy(float)
    end = ev["end_us"].to_numpy(float)
    at = np.searchsorted(lo, ts, "right") - 1  # the last span starting at or before each row
    inside = (at >= 0) & (ts < hi[np.clip(at, 0, None)])
    cpu = cpu_mask(ev)
    holds = cpu & _holds_a_span(ts, end, lo, hi)
    launch = ev["launch_row"].to_numpy()
    launched = launch >= 0
    kept_host = (inside | holds) & cpu
    labels = ev.index.to_numpy()
    by_launch = np.zeros(len(ev), dtype=bool)
    by_launch[launched] = np.isin(launch[launched], labels[kept_host])
    gpu = ~cpu
    out: np.ndarray = kept_host | (gpu & launched & by_launch) | (gpu & ~launched & inside)
    return out


def _holds_a_span(ts: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray
                  ) -> np.ndarray:
    """Per row: whether it holds one of the spans [lo, hi) whole (ts <= lo and end >= hi).
    The spans starting at or after a row's start are the last ones by start; it holds one
    when it ends at or after the least of their ends."""
    ok = ~(np.isnan(lo) | np.isnan(hi))  # a span of no start or end is held by no row
    order = np.argsort(lo[ok], kind="stable")
    lo_s, hi_s = lo[ok][order], hi[ok][order]
    least_end = np.minimum.accumulate(hi_s[::-1])[::-1]  # of the spans from each on
    at = np.searchsorted(lo_s, ts, "left")  # the first span starting at or after ts
    inside = at < len(lo_s)
    out = np.zeros(len(ts), dtype=bool)
    out[inside] = end[inside] >= least_end[at[inside]]
    return out
