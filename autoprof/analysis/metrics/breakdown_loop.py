"""The breakdown's step windows and the part of each step that passes between two calls.

A decorated function's (or a region's) profiler step runs from one call to the next:
`ProfilerStep#N` opens inside autoprof's `prof.step()` after call N-1 returns and closes in
the same place after call N. In time order a step holds

| part | from | to | whose |
| --- | --- | --- | --- |
| between calls | the step's start | the call's start | the caller's loop (`for b in loader:`) |
| the call | the call region's start | its end | the function's |
| the tail | the call's end | the step's CPU end | autoprof's (bookkeeping, `prof.step()`) |

The tail is autoprof's own: the function has returned into autoprof, which has not yet
returned to the caller, so no user code runs there on the call's thread. The time between
calls is the user's and goes to the buckets by the same rules as the call. A step without a
call region (a trace of the user's own `torch.profiler`) is all call: nothing is between calls.

A step's window runs from its start to the later of its CPU end and the end of the last GPU
work it launched. It starts no earlier than the previous window's end (a GPU tail is counted
once), nor before GPU work launched outside the recorded steps (no launch in the trace: the
queue of an unrecorded step before it) has finished, when the step's own first GPU work
waited for it; such work is never counted in a step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME
from autoprof.analysis.metrics._tree import has_ancestor_in, subtree
from autoprof.analysis.metrics.breakdown_where import Rows
from autoprof.analysis.metrics.stats import step_rows

UNTRACED = "untraced"
LOADER = "DataLoader.__next__"
WHERE_BETWEEN_COLUMNS = ["rank", "name", "us"]


def foreign_work(rows: Rows, step_col: np.ndarray, has_steps: bool) -> np.ndarray:
    """GPU work launched outside every recorded step (its row has no step) in a trace whose
    other GPU work has one: it belongs to a step before the trace, never to a recorded one."""
    work = rows.work
    if not has_steps or not (work & (step_col >= 0)).any():
        return np.zeros(rows.n, dtype=bool)
    return np.asarray(work & (step_col < 0))


def windows(ev: pd.DataFrame, rows: Rows, call_region: str | None) -> pd.DataFrame:
    """Per step: `step`, `step_start`, `cpu_end`, `call_start`, `call_end`, `has_call`,
    `gpu_end`, and the window `start`, `end` (module doc)."""
    steps = step_rows(ev)
    step_col = ev["step"].to_numpy()
    if steps.empty:
        lo = float(np.min(rows.ts)) if rows.n else 0.0
        hi = float(np.max(rows.end)) if rows.n else 0.0
        table = pd.DataFrame({"step": [-1], "step_start": [lo], "cpu_end": [hi]})
    else:
        table = pd.DataFrame({"step": steps["step_no"].to_numpy(),
                              "step_start": steps["ts_us"].to_numpy(float),
                              "cpu_end": steps["end_us"].to_numpy(float)})
    table["call_start"], table["call_end"] = table["step_start"], table["cpu_end"]
    table["has_call"] = False
    if call_region is not None and not steps.empty:
        _calls(table, rows, ev.index.get_indexer(steps.index), call_region)
    own_work = rows.work & (step_col >= 0) if not steps.empty else rows.work
    gpu_end = pd.Series(rows.end[own_work]).groupby(step_col[own_work]).max()
    first_gpu = pd.Series(rows.ts[own_work]).groupby(step_col[own_work]).min()
    table["gpu_end"] = table["step"].map(gpu_end).astype(float)
    table["end"] = np.fmax(table["cpu_end"].to_numpy(), table["gpu_end"].to_numpy())
    foreign = foreign_work(rows, step_col, not steps.empty)
    waited = _foreign_end_before(rows.ts[foreign], rows.end[foreign],
                                 table["step"].map(first_gpu).to_numpy(float))
    start = table["step_start"].to_numpy(float).copy()
    end = table["end"].to_numpy(float).copy()
    prev_end = -np.inf
    for i in range(len(table)):  # a step starts after what ran before it on the GPU
        start[i] = max(start[i], prev_end, waited[i])
        end[i] = max(end[i], start[i])
        prev_end = max(prev_end, end[i])
    table["start"], table["end"] = start, end
    return table


def _calls(table: pd.DataFrame, rows: Rows, step_pos: np.ndarray, call_region: str) -> None:
    """Fill the call columns of `table` from the call regions directly inside each step."""
    calls = np.flatnonzero(rows.region & rows.named(call_region))
    calls = calls[np.isin(rows.parent[calls], step_pos)]
    if not len(calls):
        return
    at = pd.Series(np.arange(len(step_pos)), index=step_pos)[rows.parent[calls]].to_numpy()
    table.loc[at, "call_start"] = rows.ts[calls]
    table.loc[at, "call_end"] = rows.end[calls]
    table.loc[at, "has_call"] = True


def _foreign_end_before(ts: np.ndarray, end: np.ndarray, first_own: np.ndarray) -> np.ndarray:
    """Per step: the end of the foreign GPU work that started before the step's first own GPU
    work (capped there: work on another stream never pushes past it); -inf when none."""
    out = np.full(len(first_own), -np.inf)
    if not len(ts):
        return out
    order = np.argsort(ts, kind="stable")
    starts, reach = ts[order], np.maximum.accumulate(end[order])
    known = np.isfinite(first_own)
    k = np.searchsorted(starts, first_own[known], "left") - 1
    got = np.where(k >= 0, reach[np.clip(k, 0, None)], -np.inf)
    out[known] = np.minimum(got, first_own[known])
    return out


def tail_intervals(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """autoprof's tail of each step with a call: from the call's end to the step's CPU end."""
    has = table["has_call"].to_numpy(bool)
    return (table["call_end"].to_numpy(float)[has], table["cpu_end"].to_numpy(float)[has])


def between_mask(table: pd.DataFrame, mid: np.ndarray, win: np.ndarray, ok: np.ndarray
                 ) -> np.ndarray:
    """The segments (by their midpoints) of windows with a call that fall outside every call:
    the host is in the caller's loop."""
    has = table["has_call"].to_numpy(bool)
    if not has.any():
        return np.zeros(len(mid), dtype=bool)
    cs = table["call_start"].to_numpy(float)[has]
    ce = table["call_end"].to_numpy(float)[has]
    inside = (np.searchsorted(cs, mid, "right") - np.searchsorted(ce, mid, "right")) > 0
    return np.asarray(ok & has[np.clip(win, 0, None)] & ~inside)


def between_where(ev: pd.DataFrame, rows: Rows, user: np.ndarray, call_region: str | None,
                  points: np.ndarray, host_between: np.ndarray, rank: int) -> pd.DataFrame:
    """What the caller's loop does in the GPU-idle time between calls: per outermost traced
    row of the call's thread outside the call (a DataLoader's fetch as `DataLoader.__next__`),
    its share of that time, summed over the steps; the rest `untraced`."""
    calls = rows.region & rows.named(call_region) & user
    total = float(np.sum(np.diff(points)[host_between])) if len(points) > 1 else 0.0
    if not calls.any() or not total > 0:
        return pd.DataFrame({c: [] for c in WHERE_BETWEEN_COLUMNS})
    tid = ev["tid"].to_numpy() if "tid" in ev.columns else np.zeros(rows.n, dtype=np.int64)
    thread = pd.Series(tid[calls]).mode().iloc[0]
    loop = user & (tid == thread) & ~subtree(rows.parent, calls)
    outer = loop & ~has_ancestor_in(rows.parent, loop)
    seg = np.where(host_between, np.diff(points), 0.0)
    cum = np.concatenate([[0.0], np.cumsum(seg)])

    def upto(x: np.ndarray) -> np.ndarray:
        k = np.clip(np.searchsorted(points, x, "right") - 1, 0, len(seg) - 1)
        part = np.clip(x - points[k], 0.0, np.diff(points)[k]) * (seg[k] > 0)
        return np.asarray(cum[k] + np.where(x > points[0], part, 0.0))

    us = upto(rows.end[outer]) - upto(rows.ts[outer])
    names = [LOADER if DATA_LOADER_NAME.search(str(n)) else str(n) for n in rows.names(outer)]
    table = pd.DataFrame({"name": names, "us": us})
    table = table[table["us"] > 0].groupby("name", sort=False)["us"].sum()
    rest = total - float(table.sum())
    if rest > 1e-9:
        table[UNTRACED] = table.get(UNTRACED, 0.0) + rest
    out = table.sort_values(ascending=False, kind="stable").reset_index()
    out.insert(0, "rank", rank)
    return out[WHERE_BETWEEN_COLUMNS]


def drain_ends(sync_end: np.ndarray, sync_step: np.ndarray, table: pd.DataFrame,
                work_starts: np.ndarray) -> np.ndarray:
    """Where the drain after each sync ends: the start of the next GPU work or the end of the
    part of its step the sync is in, whichever comes first: a sync in the call drains up to
    the call's end, one in the caller's loop up to the call's start (the call is not its)."""
    if not len(sync_end):
        return sync_end.copy()
    inf = np.inf

    def next_after(sorted_starts: np.ndarray) -> np.ndarray:
        i = np.searchsorted(sorted_starts, sync_end, "left")
        padded = np.concatenate([sorted_starts, [inf]])
        return padded[i]

    first = ~pd.Series(table["step"].to_numpy()).duplicated().to_numpy()
    by_step = table[first].set_index("step")
    call_start = by_step["call_start"].reindex(sync_step).to_numpy(float)
    call_end = by_step["call_end"].reindex(sync_step).to_numpy(float)
    in_loop = by_step["has_call"].reindex(sync_step).fillna(False).to_numpy(bool) & \
        (sync_end <= call_start)
    until = np.where(in_loop, call_start, call_end)
    until = np.where(np.isnan(until), sync_end, until)
    return np.asarray(np.maximum(np.minimum(next_after(work_starts), until), sync_end))
