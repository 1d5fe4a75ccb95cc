"""Host time taken out of the stretches before calls: the part a change names, at the plan's pace.

A change that removes host time (the loop between calls, a DataLoader's fetches, a bias add,
a captured region) names, for each call, how much of the measured stretch before it goes:
`measured(lo, hi)`, the measured length of that part in [lo, hi]. What the replay takes off
is that length at the plan's pace (`Plan.pace_in` inside the region the host was scaled in,
`pace_out` outside). The measured parts depend on the graph and the change only, so they
are found once per call (and kept on the graph under a key when the same change is applied
to many plans, as the fit of the host scale does) and the paces applied to every call at
once.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import numpy as np

from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.simulate import Plan
from autoprof.analysis.metrics.stats import Coverage

Measure = Callable[[float, float], float]


def _part(lo: float, hi: float, measured: Measure,
          region: tuple[list[float], list[float]] | None) -> tuple[float, float]:
    """The measured part of the stretch [lo, hi] before a call (its length) and how much of
    it lies inside `region`'s spans, as (starts, ends) lists (0 without a region or part)."""
    total = measured(lo, hi)
    if total <= 0 or region is None:
        return total, 0.0
    starts, ends = region
    inside = 0.0
    k = bisect.bisect_right(ends, lo)
    while k < len(starts) and starts[k] < hi:
        inside += measured(max(lo, starts[k]), min(hi, ends[k]))
        k += 1
    return total, min(inside, total)


def _parts(g: Graph, calls: np.ndarray, measured: Measure, region: Coverage | None,
           key: str | None) -> np.ndarray:
    """`_part` of each of `calls`, as rows (total, inside); kept on the graph under `key`."""
    memo_key = None if key is None else f"hide:{key}"
    if memo_key is not None and memo_key in g.memo:
        return g.memo[memo_key]
    lo, hi = g.call_gap_lo_us.tolist(), g.call_ts_us.tolist()  # plain floats: one per call
    spans = None if region is None else (region.s.tolist(), region.e.tolist())
    out = np.array([_part(lo[c], hi[c], measured, spans) for c in calls.tolist()],
                   dtype=float).reshape(-1, 2)
    if memo_key is not None:
        g.memo[memo_key] = out
    return out


def hide_calls(g: Graph, plan: Plan, calls: np.ndarray, measured: Measure,
               region: Coverage | None, share: float = 1.0, key: str | None = None
               ) -> np.ndarray:
    """Remove `share` of the named part of each of `calls`' stretches (a call once at most);
    the plan's time each held. `region`: the spans of the plan's `pace_region` (None without
    one); `key`: names the (change, region) pair when the graph should keep the parts."""
    calls = np.asarray(calls, dtype=np.int64)
    parts = _parts(g, calls, measured, region, key)
    total, inside = parts[:, 0], parts[:, 1]
    pace_out = plan.pace_out[calls]
    if region is None:
        held = total * pace_out
    else:
        held = inside * plan.pace_in[calls] + (total - inside) * pace_out
    took: np.ndarray = np.where(total <= 0, 0.0, held)
    left = plan.call_gap_us[calls] - share * took
    plan.call_gap_us[calls] = np.where(0.0 > left, 0.0, left)
    return took
