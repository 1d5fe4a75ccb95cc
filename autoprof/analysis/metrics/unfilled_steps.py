"""A run stopped early ends with a step that holds no call: the analysis drops it first.

A run stopped early (``flush()``, the end of the process: status ``partial``) closes its last
``ProfilerStep#N`` span with no call inside: torch opens the span at ``step()`` and the stop
ends it. Such a step says nothing about the function, and its short span would pull a median
of step times down:

| step | cpu_span_us | the run's region inside | kept |
| --- | --- | --- | --- |
| 3 | 101.2 | yes | True |
| 4 | 3.4 | no | False |
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import cpu_work_mask, isin_mask

_STEPS_PER_RANK = 1 << 32  # (rank, step) as one int64 key


def steps_with(events: pd.DataFrame, mask: np.ndarray) -> set[tuple[int, int]]:
    """The (rank, step) pairs of the rows ``mask`` selects that lie in a step."""
    rows = mask & (events["step"].to_numpy() >= 0)
    ranks, steps = events["rank"].to_numpy()[rows], events["step"].to_numpy()[rows]
    # both are >= 0; pd.unique hashes (no sort of every row)
    pairs = pd.unique(ranks.astype(np.int64) * _STEPS_PER_RANK + steps)
    return set(zip((pairs // _STEPS_PER_RANK).tolist(), (pairs % _STEPS_PER_RANK).tolist(),
                   strict=True))


def without_unfilled_last_steps(events: pd.DataFrame, name: object) -> pd.DataFrame:
    """`events` without each rank's last step when it holds no call of the run's region
    `name` while an earlier step of that rank does: the span torch opened at the last
    ``step()`` of a run stopped early, which the stop closed with nothing of the function in
    it (the session's ``steps_recorded`` does not count it). Its rows would add a short,
    empty step to every step table and mean. Unchanged when `name` names no region."""
    if not isinstance(name, str) or not name or events.empty or "step" not in events:
        return events
    held = steps_with(events, cpu_work_mask(events) & isin_mask(events["name"], (name,)))
    if not held:
        return events
    ranks, step_nos = events["rank"].to_numpy(), events["step"].to_numpy()
    drop = np.zeros(len(events), bool)
    for rank in set(ranks[step_nos >= 0].tolist()):
        last = int(step_nos[(ranks == rank) & (step_nos >= 0)].max())
        if (rank, last) not in held and any(r == rank for r, _ in held):
            drop |= (ranks == rank) & (step_nos == last)
    return events[~drop] if drop.any() else events
