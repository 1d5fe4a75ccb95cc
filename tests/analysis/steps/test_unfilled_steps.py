"""The analysis drops the empty last step a run stopped early leaves (metrics/unfilled_steps.py)."""

from __future__ import annotations

from support.events_table import events_table, kineto_event

from autoprof.analysis.metrics.unfilled_steps import without_unfilled_last_steps


def _step(n: int, ts: float, dur: float, called: bool) -> list[dict[str, object]]:
    rows = [kineto_event(f"ProfilerStep#{n}", "user_annotation", ts, dur)]
    if called:
        rows.append(kineto_event("train_step", "user_annotation", ts + 1.0, dur - 2.0))
    return rows


def test_the_last_step_without_a_call_is_dropped_and_the_called_ones_kept() -> None:
    events = events_table([*_step(0, 0.0, 100.0, True), *_step(1, 100.0, 100.0, True),
                           *_step(2, 200.0, 3.0, False)])
    kept = without_unfilled_last_steps(events, "train_step")
    assert sorted(set(kept["step"].tolist())) == [0, 1]
    assert len(kept) == len(events) - 1  # only the empty step's own span goes


def test_nothing_is_dropped_when_the_region_is_unnamed_or_never_seen() -> None:
    events = events_table([*_step(0, 0.0, 100.0, True), *_step(1, 100.0, 3.0, False)])
    assert without_unfilled_last_steps(events, None) is events
    assert without_unfilled_last_steps(events, "other_function") is events


def test_an_empty_step_before_the_last_is_kept() -> None:
    events = events_table([*_step(0, 0.0, 100.0, True), *_step(1, 100.0, 3.0, False),
                           *_step(2, 103.0, 100.0, True)])
    assert without_unfilled_last_steps(events, "train_step") is events
