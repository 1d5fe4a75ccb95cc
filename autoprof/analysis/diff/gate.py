"""``autoprof diff --gate PCT``: pass, fail, or cannot tell, and what would settle it.

A gate answers from the judged measure's 95% interval for the change (significance.py):

| answer | when | exit |
| --- | --- | --- |
| `fail` | the interval's lower end is above PCT: a slowdown beyond the gate, for sure | 1 |
| `pass` | the interval's upper end is at or below PCT: no slowdown beyond the gate, for sure | 0 |
| `cannot tell` | the interval holds PCT: these runs cannot say which side of the gate B is | 3 |

Runs that cannot be compared, or whose steps cannot be read, are not judged (exit 2). A
`cannot tell` is never a pass unless the caller says so (``--cannot-tell-passes``). What
would settle it is said in one sentence: how many runs a side would narrow the interval
enough (from the between-run spread the diff used), or that the change is too close to the
gate for this machine's spread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from autoprof.analysis.diff.significance import Change
from autoprof.student_t import t975

GateKind = Literal["pass", "fail", "cannot tell"]
EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_TELL = 0, 1, 3
GATE_EXITS: dict[GateKind, int] = {"pass": EXIT_PASS, "fail": EXIT_FAIL,
                                   "cannot tell": EXIT_CANNOT_TELL}
MAX_SUGGESTED_RUNS = 30  # beyond this many runs a side the gate is out of this machine's reach

_SOURCES = {"repeats": "measured from the repeats", "blocks": "from the run's own blocks",
            "floor": "the floor assumed for one run a side"}


@dataclass(frozen=True)
class GateAnswer:
    """The gate's answer on one judged change."""

    kind: GateKind
    gate_pct: float
    text: str  # one line: the answer, the interval against the gate, what would settle it

    @property
    def exit_code(self) -> int:
        return GATE_EXITS[self.kind]

    def to_json(self) -> dict[str, object]:
        return {"answer": self.kind, "gate_pct": self.gate_pct, "exit": self.exit_code,
                "text": self.text}


def answer(change: Change, gate_pct: float) -> GateAnswer:
    """The gate's answer for a judged change with an interval (``ci_low_pct`` and
    ``ci_high_pct`` set: a change with too few steps is not judged, see ``result``)."""
    low, high = change.ci_low_pct, change.ci_high_pct
    if low is None or high is None or change.change_pct is None:
        raise ValueError("a gate needs a change with an interval")
    span = f"change {change.change_pct:+.1f}% (95% CI {low:+.1f}% .. {high:+.1f}%)"
    if low > gate_pct:
        return GateAnswer("fail", gate_pct, f"gate {gate_pct:g}%: FAIL: {span}, all of it "
                                            "above the gate")
    if high <= gate_pct:
        return GateAnswer("pass", gate_pct, f"gate {gate_pct:g}%: PASS: {span}, all of it at "
                                            "or below the gate")
    return GateAnswer("cannot tell", gate_pct,
                      f"gate {gate_pct:g}%: CANNOT TELL: {span} holds the gate; "
                      f"{settle(change, gate_pct)}")


def settle(change: Change, gate_pct: float) -> str:
    """What would settle a gate the interval straddles: runs a side, or that none would."""
    spread_pct = change.between_run_pct
    assert change.change_pct is not None
    distance = abs(math.log1p(change.change_pct / 100.0) - math.log1p(gate_pct / 100.0))
    if spread_pct is None or spread_pct <= 0:
        return "record more steps and runs a side"
    spread = math.log1p(spread_pct / 100.0)
    have = min(change.runs_a, change.runs_b)
    needed = runs_needed(spread, distance, have)
    source = _SOURCES[change.between_run_source]
    if needed is None:
        return (f"the between-run spread is {spread_pct:.1f}% ({source}) "
                f"and the change lies {100 * math.expm1(distance):.1f}% from the gate: more "
                f"than {MAX_SUGGESTED_RUNS} runs a side would be needed"
                + ("; repeats (2 or more runs a side) would measure this machine's own spread"
                   if change.between_run_source != "repeats" else
                   ": this machine cannot settle it (a quieter machine, or a gate further "
                   "from the change)"))
    guess = ("" if change.between_run_source == "repeats" else
             "; a guess until repeats measure this machine's own spread, which a loaded "
             "machine makes larger")
    return (f"record {needed - have} more run(s) a side ({needed} in all, each a fresh "
            f"process; the between-run spread is {spread_pct:.1f}%, {source}{guess})")


def runs_needed(spread: float, distance: float, have: int) -> int | None:
    """The fewest runs a side (more than ``have``) whose interval half-width, for a log
    between-run spread ``spread``, is below ``distance`` (the change's log distance from the
    gate); None when more than MAX_SUGGESTED_RUNS would be needed."""
    for runs in range(have + 1, MAX_SUGGESTED_RUNS + 1):
        if t975(2 * runs - 2) * spread * math.sqrt(2.0 / runs) < distance:
            return runs
    return None
