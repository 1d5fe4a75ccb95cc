"""Which profiler steps hold a call of the profiled function, and what each spent in a DataLoader.

A run stopped early (``flush()``, the end of the process: status ``partial``) closes its last
``ProfilerStep#N`` span with no call inside: torch opens the span at ``step()`` and the stop
ends it. Such a step says nothing about the function, and its short span would pull a median
of step times down:

| step | cpu_span_us | the run's region inside | called |
| --- | --- | --- | --- |
| 3 | 101.2 | yes | True |
| 4 | 3.4 | no | False |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME, STEP_NAME
from autoprof.analysis.metrics.stats import cpu_work_mask, name_matches
from autoprof.analysis.metrics.sync import autoprof_mask

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis


_STEPS_PER_RANK = 1 << 32  # (rank, step) as one int64 key


def _steps_with(events: pd.DataFrame, mask: np.ndarray) -> set[tuple[int, int]]:
    rows = mask & (events["step"].to_numpy() >= 0)
    ranks, steps = events["rank"].to_numpy()[rows], events["step"].to_numpy()[rows]
    pairs = np.unique(ranks.astype(np.int64) * _STEPS_PER_RANK + steps)  # both are >= 0
    return set(zip((pairs // _STEPS_PER_RANK).tolist(), (pairs % _STEPS_PER_RANK).tolist(),
                   strict=True))


def called_steps(ctx: Analysis) -> pd.DataFrame:
    """`ctx.steps` without the steps that hold no call of the function.

    A step holds a call when the region named after the run (the decorated call) is inside
    it; a run without such regions (a plain torch trace) counts every step that holds any
    CPU work besides its own span and autoprof's labels."""
    steps, events = ctx.steps, ctx.events
    if steps.empty:
        return steps
    name = ctx.call_region
    cpu = cpu_work_mask(events)
    held: set[tuple[int, int]] = set()
    if isinstance(name, str) and name:
        held = _steps_with(events, cpu & (events["name"].to_numpy() == name))
    if not held:
        work = cpu & ~name_matches(events["name"], STEP_NAME) & ~autoprof_mask(events)
        held = _steps_with(events, work)
    keys = zip(steps["rank"].astype(int).tolist(), steps["step"].astype(int).tolist(), strict=True)
    return steps[np.fromiter((k in held for k in keys), bool, len(steps))]


def without_unfilled_last_steps(events: pd.DataFrame, name: object) -> pd.DataFrame:
    """`events` without each rank's last step when it holds no call of the run's region
    `name` while an earlier step of that rank does: the span torch opened at the last
    ``step()`` of a run stopped early, which the stop closed with nothing of the function in
    it (the session's ``steps_recorded`` does not count it). Its rows would add a short,
    empty step to every step table and mean. Unchanged when `name` names no region."""
    if not isinstance(name, str) or not name or events.empty or "step" not in events:
        return events
    held = _steps_with(events, cpu_work_mask(events) & (events["name"].to_numpy() == name))
    if not held:
        return events
    ranks, step_nos = events["rank"].to_numpy(), events["step"].to_numpy()
    drop = np.zeros(len(events), bool)
    for rank in set(ranks[step_nos >= 0].tolist()):
        last = int(step_nos[(ranks == rank) & (step_nos >= 0)].max())
        if (rank, last) not in held and any(r == rank for r, _ in held):
            drop |= (ranks == rank) & (step_nos == last)
    return events[~drop] if drop.any() else events


def data_loader_us(ctx: Analysis, rank: int) -> dict[int, float]:
    """Per step of `rank`: the time in the outermost DataLoader rows (fetching batches)."""
    events = ctx.events
    mask = (cpu_work_mask(events) & name_matches(events["name"], DATA_LOADER_NAME)
            & (events["rank"].to_numpy() == rank) & (events["step"].to_numpy() >= 0))
    if not mask.any():
        return {}
    rows = events[mask]
    parents = rows["parent"].to_numpy()
    outermost = ~np.isin(parents, rows.index.to_numpy())
    rows = rows[outermost]
    totals = rows.groupby(rows["step"].to_numpy())["dur_us"].sum()
    return {int(k): float(v) for k, v in totals.items()}
