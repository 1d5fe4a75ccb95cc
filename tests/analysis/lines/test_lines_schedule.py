"""Where the lines step goes in the schedule: the first of two or more profiler warm-up
steps, never torch's only one. torch's profiler then warms up in the next step (its trace's
start, CUPTI's on a GPU, is paid there): on the H200, with the lines step in the only
warm-up step, the first measured step took 3.1 ms against 0.5-0.6 ms for the others."""

from __future__ import annotations

from typing import Any

import pytest

from autoprof.record.options import Options, Schedule
from autoprof.record.session.driver import Driver


def phases(schedule: dict[str, int], source_lines: bool = True) -> list[str]:
    driver = Driver(Options(schedule=Schedule.coerce(schedule), source_lines=source_lines),
                    ("cpu",), lambda prof: None)
    return [driver.phase(i) for i in range(int(driver.total_steps))]


def torch_actions(schedule: dict[str, int]) -> list[str]:
    driver = Driver(Options(schedule=Schedule.coerce(schedule)), ("cpu",), lambda prof: None)
    return [driver.schedule_fn(i).name for i in range(int(driver.total_steps))]


def test_two_warm_up_steps_give_a_lines_step_and_a_warm_up_after_it() -> None:
    two = {"wait": 1, "warmup": 2, "active": 3}
    assert Options().source_lines
    assert phases(two) == ["wait", "lines", "profiler_warmup", "active", "active",
                           "last_active"]
    assert torch_actions(two) == ["NONE", "NONE", "WARMUP", "RECORD", "RECORD",
                                  "RECORD_AND_SAVE"]


def test_the_default_schedule_records_lines_and_keeps_a_warm_up_step_for_torch() -> None:
    assert Schedule().warmup == 2  # the lines step, then torch's own warm-up
    assert phases({}) == ["wait", "lines", "profiler_warmup", "active", "active",
                          "last_active"]


@pytest.mark.parametrize("schedule", [
    {"wait": 1, "warmup": 1, "active": 3}, {"wait": 0, "warmup": 1, "active": 1},
    {"wait": 2, "warmup": 0, "active": 2}, {"skip_first": 2, "wait": 0, "warmup": 1, "active": 1},
])
def test_never_torch_s_only_warm_up_step(schedule: dict[str, Any]) -> None:
    assert "lines" not in phases(schedule)
    assert phases(schedule) == phases(schedule, source_lines=False)


@pytest.mark.parametrize("schedule", [
    {"wait": 0, "warmup": 2, "active": 1}, {"wait": 1, "warmup": 3, "active": 2},
    {"skip_first": 2, "wait": 1, "warmup": 2, "active": 1, "repeat": 2},
])
def test_the_first_of_several_warm_up_steps(schedule: dict[str, Any]) -> None:
    got = phases(schedule)
    at = got.index("lines")
    assert got.count("lines") == 1 and got[at + 1] == "profiler_warmup"
    assert torch_actions(schedule)[at:at + 2] == ["NONE", "WARMUP"]
    without = phases(schedule, source_lines=False)
    assert without[at] == "profiler_warmup" and got[:at] + got[at + 1:] == (
        without[:at] + without[at + 1:])
