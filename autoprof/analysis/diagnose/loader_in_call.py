"""`loader_in_call`: a DataLoader without workers fetched inside the call, offered as loader
workers.

A `DataLoader(num_workers=0)` read inside the decorated call (`x, y = next(batches)` in the
step) builds each batch on the step's own thread while the GPU waits. Where the caller's
loop does the reading (`for batch in loader: step(batch)`), the time between calls is the
opportunity (`between_calls`, predictions.py); this is the same fix for a fetch inside the
call:

- evidence: the spans of torch's `_SingleProcessDataLoaderIter.__next__` (the profiler's
  `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`) inside the call's spans in
  the profiled steps, their union MIN_FETCH_PCT or more of the mean step;
- fix: `loader-workers`, replayed as for the time between calls (`replay/fixes.py`): the
  host time inside the fetches overlapped by WORKERS worker processes, each step at least
  its measured fetch time over the workers (they make batches no faster), the copies
  non-blocking from pinned memory;
- where: the fetch span's name and its time a step.

A multi-process DataLoader's fetch (`_MultiProcessingDataLoaderIter`) is not one: its workers
run already, and the trace does not show their pace.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import (
    Coverage,
    cpu_mask,
    isin_mask,
    name_matches,
    union_length,
)

SINGLE_PROCESS_FETCH = re.compile(r"_SingleProcessDataLoaderIter\.__next__")
MIN_FETCH_PCT = 10.0  # of the mean step: as the time between calls (baseline.MIN_BETWEEN_PCT)


def fetch_in_call(events: pd.DataFrame, call: str, step_us: float, hint: str
                  ) -> dict[str, Any] | None:
    """The `loader_in_call` opportunity (before its prediction; `hint`: the fix's), or None
    where no fetch without workers inside the call holds MIN_FETCH_PCT of the mean step
    `step_us`."""
    if not step_us > 0 or not len(events):
        return None
    fetch = name_matches(events["name"], SINGLE_PROCESS_FETCH)
    if not fetch.any():
        return None
    host = cpu_mask(events) & (events["step"].to_numpy() >= 0)
    fetch &= host
    calls = host & isin_mask(events["name"], (call,))
    if not fetch.any() or not calls.any():
        return None
    spans = Coverage(events["ts_us"].to_numpy(float)[calls],
                     events["end_us"].to_numpy(float)[calls])
    ts, end = events["ts_us"].to_numpy(float)[fetch], events["end_us"].to_numpy(float)[fetch]
    inside = spans.spans_at(ts) >= 0
    steps = int(len(np.unique(events["step"].to_numpy()[host])))
    us = union_length(ts[inside], end[inside]) / max(steps, 1)
    pct = 100.0 * us / step_us
    if pct < MIN_FETCH_PCT:
        return None
    name = str(events["name"].iat[int(np.flatnonzero(fetch)[inside][0])])
    return {"cause": "loader_in_call", "us_per_step": us, "pct_of_step": pct,
            "max_speedup": step_us / (step_us - us) if step_us > us else None,
            "where": [{"name": name, "us_per_step": us}],
            "hint": hint, "evidence": {"fetch_us_per_step": us, "steps": steps}}
