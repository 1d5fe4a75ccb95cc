"""Where a rising function of a factor crosses a target: the bisection's answer, from fewer
evaluations.

`fit_host_scale` looks for the largest host factor whose replayed median step is no slower
than the untraced step: it halves (0, highest] until the interval is under `tolerance` times
`highest` and answers the interval's low end. Each evaluation replays the trace, and halving
takes 15 of them. `crossing` gives the same number with about five:

1. it runs the same halving as before, but evaluates a midpoint only where it falls inside
   the bracket the points evaluated so far give: a midpoint at or below a point found no
   slower than the target is no slower either, one at or above a point found slower is
   slower (the function rises), so the halving takes the same turns as when it evaluated
   every midpoint;
2. once a point on each side is known, before evaluating a midpoint it tries a secant step
   (the step time is close to linear in the factor between the points where the median
   step changes) and a probe past its estimate, towards the crossing: a sixteenth of the
   tolerance, then PROBE_GROWTH times further each round. A good estimate closes the
   bracket to the probe's width, and the midpoints left fall outside it. At most
   SECANT_ROUNDS such steps: where the function bends too much for them, the halving goes
   on as before, up to twice that many evaluations more than it took alone.

| host fit: evaluations | halving | crossing (mean, range) |
| --- | --- | --- |
| eager_100 x100 | 15 | 4 |
| 112 fits: summaries of tests/data, tests/analysis/diff/data/h200 | 15 | 7.0 (4 to 16) |

The answer is the halving's to the last bit wherever the function does not fall as the
factor grows; `crossing` also returns how many evaluations it made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

SECANT_ROUNDS = 3  # secant steps tried before the halving takes over
PROBE_SHARE = 1.0 / 16.0  # of the tolerance: how far past an estimate the probe lands
PROBE_GROWTH = 4.0  # each round's probe lands this much further than the last's
LOWEST = 1e-6  # the answer when even the smallest factor is slower than the target


@dataclass
class Crossing:
    """The evaluated points of a rising `step_us(factor)` and the bracket they give:
    `below` the largest factor found no slower than `target_us` (0.0: none yet, never
    evaluated), `above` the smallest found slower."""

    step_us: Callable[[float], float]
    target_us: float
    highest: float
    below: float = 0.0
    above: float = 0.0
    values: dict[float, float] = field(default_factory=dict)

    @property
    def evaluations(self) -> int:
        return len(self.values)

    def slower(self, factor: float) -> bool:
        """Whether the step at `factor` is slower than the target (evaluated once)."""
        if factor not in self.values:
            self.values[factor] = self.step_us(factor)
        value = self.values[factor]
        if value > self.target_us:
            self.above = min(self.above, factor)
        else:
            self.below = max(self.below, factor)
        return value > self.target_us

    def known_slower(self, factor: float) -> bool:
        """`slower(factor)`, read from the bracket where it already tells (module doc)."""
        if 0.0 < factor <= self.below:
            return False
        if factor >= self.above:
            return True
        return self.slower(factor)


def crossing(step_us: Callable[[float], float], target_us: float, highest: float,
             tolerance: float) -> tuple[float, int]:
    """The halving's answer (module doc) and how many times `step_us` was evaluated."""
    found = Crossing(step_us, target_us, highest, above=highest)
    if not found.slower(highest):
        return highest, found.evaluations
    width = tolerance * highest
    rounds = SECANT_ROUNDS
    lo, hi = 0.0, highest  # the halving, as it ran when it evaluated every midpoint
    while hi - lo > width:
        mid = (lo + hi) / 2
        if rounds and found.below > 0.0 and found.below < mid < found.above:
            # a midpoint to evaluate, with a point on each side: a secant step first, its
            # probe further each round (a poor estimate was further off than the last probe)
            _secant_round(found, PROBE_SHARE * width * PROBE_GROWTH ** (SECANT_ROUNDS - rounds))
            rounds -= 1
        if found.known_slower(mid):
            hi = mid
        else:
            lo = mid
    return max(lo, LOWEST), found.evaluations


def _secant_round(found: Crossing, probe: float) -> None:
    """Evaluate where the line through the bracket's ends meets the target, then a probe
    `probe` past it towards the crossing: one good estimate closes the bracket to `probe`."""
    estimate = _estimate(found, found.below, found.above)
    if estimate is None:
        return
    step = -probe if found.slower(estimate) else probe
    if found.below < estimate + step < found.above:
        found.slower(estimate + step)


def _estimate(found: Crossing, x0: float, x1: float) -> float | None:
    """Where the line through the points at `x0` and `x1` meets the target, if that is
    strictly inside the bracket (None where it is not, or the line is flat)."""
    y0, y1 = found.values[x0], found.values[x1]
    if y1 == y0:
        return None
    estimate = x0 + (found.target_us - y0) * (x1 - x0) / (y1 - y0)
    return estimate if found.below < estimate < found.above else None
