"""Steps a run recorded but whose times cannot be read: such a run is not judged.

A run's manifest says how many steps its traces hold (``steps_recorded``). When fewer of them
have a step time that is a time (finite, above zero: a step event removed, or its duration
negative, absurd such as 1e300, or text, is not), the trace is damaged, and a verdict or a
gate from the steps left would judge a run that is not the one recorded. The diff then gives
no verdict (``too few steps``, exit 2), with a reason naming the run and the count:

| manifest ``steps_recorded`` | readable step times | judged |
| --- | --- | --- |
| 12 | 12 | yes |
| 12 | 9 | no: "B: 3 of the 12 steps its manifest records have no readable time" |
| absent (a bare trace) | 9 | yes, on the 9 (nothing says more were recorded) |
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autoprof.analysis.diff.facts import RunFacts
from autoprof.analysis.diff.significance import Change


def readable_steps(run: RunFacts) -> int:
    """The run's step times that are times: finite and above zero."""
    return sum(1 for v in run.step_us if math.isfinite(v) and v > 0)


def unreadable_steps(run: RunFacts) -> int:
    """Steps the manifest says were recorded that have no readable time (0 when it does not
    say)."""
    if run.steps_recorded is None:
        return 0
    return max(0, run.steps_recorded - readable_steps(run))


def _side_note(side: str, runs: Sequence[RunFacts]) -> str | None:
    damaged = [r for r in runs if unreadable_steps(r)]
    if not damaged:
        return None
    run = damaged[0]
    where = f" ({run.label})" if len(runs) > 1 else ""
    return (f"{side}{where}: {unreadable_steps(run)} of the {run.steps_recorded} steps its "
            "manifest records have no readable time (missing, negative, absurd or text)")


def unreadable_change(runs_a: Sequence[RunFacts], runs_b: Sequence[RunFacts]) -> Change | None:
    """A ``too few steps`` change (no verdict) when either side has a run with recorded steps
    it cannot read; None when every recorded step reads."""
    notes = [n for n in (_side_note("A", runs_a), _side_note("B", runs_b)) if n]
    if not notes:
        return None
    return Change(None, None, sum(readable_steps(r) for r in runs_a),
                  sum(readable_steps(r) for r in runs_b), None, None, None, "too few steps",
                  "; ".join(notes), len(runs_a), len(runs_b))


def damaged_sides(runs_a: Sequence[RunFacts], runs_b: Sequence[RunFacts]) -> tuple[str, ...]:
    """``A``, ``B``, both or neither: the sides holding a run with unreadable recorded
    steps."""
    return tuple(side for side, runs in (("A", runs_a), ("B", runs_b))
                 if any(unreadable_steps(r) for r in runs))
