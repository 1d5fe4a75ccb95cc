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
MeasureMany = Callable[[np.ndarray, np.ndarray], np.ndarray]  # a Measure over arrays at once


def uncovered_by(first: Coverage, *others: Coverage | None, floor: bool = False
                 ) -> tuple[Measure, MeasureMany]:
    """The length of [lo, hi] covered by `first` less what each of `others` covers (None:
    nothing), floored at 0 with `floor`: as a Measure and as a MeasureMany."""
    rest = [o for o in others if o is not None]

    def one(lo: float, hi: float) -> float:
        out = first.covered(lo, hi)
        for other in rest:
            out = out - other.covered(lo, hi)
        return max(out, 0.0) if floor else out

    def many(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        out: np.ndarray = first.covered_many(lo, hi)
        for other in rest:
            out = out - other.covered_many(lo, hi)
        return np.maximum(out, 0.0) if floor else out

    return one, many


def _part(lo: float, hi: float, measured: Measure,
          region: tuple[list[float], list[float]] | None) -> tuple[float, float]:
    """The measured part of the stretch [lo, hi] before a call (its length) and how much of
    it lies inside `region`'s spans, as (starts, ends) lists (0 without a region or part)."""
    total = measured(lo, hi)
    if total <= 0 or region is None:
        return total, 0.0
    return total, _inside(lo, hi, total, measured, region)


def _inside(lo: float, hi: float, total: float, measured: Measure,
            region: tuple[list[float], list[float]]) -> float:
    """How much of the part of [lo, hi] (`total` long) lies inside the region's spans."""
    starts, ends = region
    inside = 0.0
    k = bisect.bisect_right(ends, lo)
    while k < len(starts) and starts[k] < hi:
        inside += measured(max(lo, starts[k]), min(hi, ends[k]))
        k += 1
    return min(inside, total)


def _parts(g: Graph, calls: np.ndarray, measured: Measure, region: Coverage | None,
           key: str | None, measured_many: MeasureMany | None = None) -> np.ndarray:
    """`_part` of each of `calls`, as rows (total, inside); kept on the graph under `key`.
    With `measured_many` the totals are measured at once, and only the calls with a part
    are walked through the region's spans."""
    memo_key = None if key is None else f"hide:{key}"
    if memo_key is not None and memo_key in g.memo:
        return g.memo[memo_key]
    lo, hi = g.call_gap_lo_us.tolist(), g.call_ts_us.tolist()  # plain floats: one per call
    spans = None if region is None else (region.s.tolist(), region.e.tolist())
    if measured_many is None:
        out = np.array([_part(lo[c], hi[c], measured, spans) for c in calls.tolist()],
                       dtype=float).reshape(-1, 2)
    else:
        out = np.zeros((len(calls), 2))
        out[:, 0] = measured_many(g.call_gap_lo_us[calls], g.call_ts_us[calls])
        if spans is not None:
            for j in np.flatnonzero(~(out[:, 0] <= 0)).tolist():  # NaN walked, as _part does
                c = int(calls[j])
                out[j, 1] = _inside(lo[c], hi[c], float(out[j, 0]), measured, spans)
    if memo_key is not None:
        g.memo[memo_key] = out
    return out


def hide_calls(g: Graph, plan: Plan, calls: np.ndarray, measured: Measure,
               region: Coverage | None, share: float = 1.0, key: str | None = None,
               measured_many: MeasureMany | None = None) -> np.ndarray:
    """Remove `share` of the named part of each of `calls`' stretches (a call once at most);
    the plan's time each held. `region`: the spans of the plan's `pace_region` (None without
    one); `key`: names the (change, region) pair when the graph should keep the parts;
    `measured_many`: `measured` over arrays, when the change has one (faster, same numbers)."""
    calls = np.asarray(calls, dtype=np.int64)
    parts = _parts(g, calls, measured, region, key, measured_many)
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
