"""A run whose manifest records more steps than have readable times is not judged; a bare
trace (no manifest count) is judged on the steps it has."""

from __future__ import annotations

from dataclasses import replace

from autoprof.analysis.diff import diff_facts, exit_status, gate_answer
from tests.analysis.diff.test_diff import _facts, checked

STEPS_US = [1000.0, 1003.0, 997.0, 1001.0, 999.0, 1002.0]


def test_recorded_steps_without_a_readable_time_leave_the_diff_unjudged() -> None:
    a = _facts(STEPS_US, steps_recorded=6)
    b = replace(a, step_us=STEPS_US[:4] + [-5.0])  # one step gone, one negative
    d = checked(diff_facts(a, b))
    assert d.verdict == "too few steps" and d.unreadable_sides == ("B",)
    assert d.step is not None and "B: 2 of the 6 steps" in d.step.reason
    assert gate_answer(d, 1000.0) is None  # even a gate wide enough to pass
    assert exit_status(d, 1000.0, cannot_tell_passes=True) == 2
    assert exit_status(d, None) == 2


def test_a_side_of_repeats_names_its_damaged_run() -> None:
    a = _facts(STEPS_US, steps_recorded=6)
    damaged = replace(a, label="runs/r2", step_us=STEPS_US[:5] + [float("inf")])
    d = diff_facts([a, a], [a, damaged])
    assert d.unreadable_sides == ("B",) and d.step is not None
    assert d.step.reason.startswith("B (runs/r2): 1 of the 6 steps")


def test_every_recorded_step_read_or_no_count_is_judged() -> None:
    a = _facts(STEPS_US, steps_recorded=6)
    assert diff_facts(a, a).verdict == "no significant change"
    bare = replace(a, step_us=STEPS_US[:4], steps_recorded=None)  # a trace without manifest
    d = diff_facts(bare, bare)
    assert d.verdict == "no significant change" and d.unreadable_sides == ()
