"""What the GPU work launched in each profiler step adds up to, for every step at once.

``per_step`` asks, per (rank, step): the summed durations of the step's GPU work, the union
of its intervals, the end of its last item and how many there are. Asked group by group
(``np.sum``, ``union_length``, ``np.max`` on each group's slices) that is some twenty numpy
calls per step: ~30 ms over the 500 steps of a long GPU trace. Here the unions of every
group are merged in one pass (each group's intervals sorted by start together, a running
end per group, blocks cut where a start passes it) and the maxima taken at once; only the
sums stay one ``np.sum`` per group, over the same values in the same order as before, so
every number is the same to the last bit (a float sum's result depends on its order).
A group holding a NaN start or end goes the per-group way (``union_length``), whose NaN
handling the merge here does not copy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import union_length

# (rank, step) -> (summed durations, union length, last end, items), all floats but items
StepWork = dict[tuple[int, int], tuple[float, float, float, int]]


def work_totals(work: pd.DataFrame) -> StepWork:
    """Per (rank, step) of the GPU work rows ``work``: the sum of their durations (end minus
    start), the length of the union of their intervals, their latest end and their count."""
    if work.empty:
        return {}
    rank = work["rank"].to_numpy()
    step = work["step"].to_numpy()
    order = np.lexsort((step, rank))
    rank, step = rank[order], step[order]
    ts = work["ts_us"].to_numpy(float)[order]
    end = work["end_us"].to_numpy(float)[order]
    change = np.flatnonzero((np.diff(rank) != 0) | (np.diff(step) != 0)) + 1
    first = np.concatenate([[0], change])
    bounds = np.concatenate([first, [len(order)]]).tolist()
    keys = zip(rank[first].tolist(), step[first].tolist(), strict=True)
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))
    durations = end - ts
    sums = [float(np.sum(durations[a:b])) for a, b in spans]
    if bool(np.isnan(ts).any() or np.isnan(end).any()):
        unions = [union_length(ts[a:b], end[a:b]) for a, b in spans]
    else:
        unions = _unions(ts, end, first, spans)
    last = np.maximum.reduceat(end, first).tolist()
    return {(int(r), int(s)): (sums[k], unions[k], float(last[k]), b - a)
            for k, ((r, s), (a, b)) in enumerate(zip(keys, spans, strict=True))}


def _unions(ts: np.ndarray, end: np.ndarray, first: np.ndarray,
            spans: list[tuple[int, int]]) -> list[float]:
    """``union_length`` of each group (``spans`` of ``ts``/``end``; no NaN): the blocks
    ``merge_intervals`` finds in each, their lengths summed per group."""
    group = np.zeros(len(ts), dtype=np.intp)
    group[first[1:]] = 1
    group = np.cumsum(group)
    by_start = np.lexsort((ts, group))  # stable: each group's argsort(kind="stable")
    s, e = ts[by_start], end[by_start]
    running = pd.Series(e).groupby(group).cummax().to_numpy()  # per group's accumulate
    new_block = np.empty(len(s), dtype=bool)
    new_block[0] = True
    new_block[1:] = s[1:] > running[:-1]
    new_block[first] = True
    at = np.flatnonzero(new_block)
    block_end = np.maximum(np.maximum.reduceat(e, at), 0.0)
    lengths = np.maximum(block_end - s[at], 0.0)
    cuts = np.searchsorted(at, [a for a, _ in spans] + [len(s)]).tolist()
    return [float(np.sum(lengths[cuts[k]:cuts[k + 1]])) for k in range(len(spans))]
