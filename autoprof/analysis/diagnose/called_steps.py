"""Which profiler steps hold a call of the profiled function, and what each spent in a DataLoader.

A run stopped early (``flush()``, the end of the process: status ``partial``) closes its last
``ProfilerStep#N`` span with no call inside: torch opens the span at ``step()`` and the stop
ends it. Such a step says nothing about the function, and its short span would pull a median
of step times down (the analysis drops it first: ``metrics/unfilled_steps.py``):

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
from autoprof.analysis.metrics.stats import cpu_work_mask, isin_mask, name_matches
from autoprof.analysis.metrics.sync import autoprof_mask
from autoprof.analysis.metrics.unfilled_steps import steps_with as _steps_with

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis


def called_steps(ctx: Analysis) -> pd.DataFrame:
    """`ctx.steps` without the steps that hold no call of the function: found once per
    analysis (``Analysis.steps_called``, a dozen checks ask), by ``steps_holding_a_call``."""
    return ctx.steps_called


def steps_holding_a_call(ctx: Analysis) -> pd.DataFrame:
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
        held = _steps_with(events, cpu & isin_mask(events["name"], (name,)))
    if not held:
        work = cpu & ~name_matches(events["name"], STEP_NAME) & ~autoprof_mask(events)
        held = _steps_with(events, work)
    keys = zip(steps["rank"].astype(int).tolist(), steps["step"].astype(int).tolist(), strict=True)
    return steps[np.fromiter((k in held for k in keys), bool, len(steps))]


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
