"""The session's state table: every (state, event) pair either has a row whose actions the
session defines, or is refused with a message that guesses the mistake."""

from __future__ import annotations

import itertools

import pytest

from autoprof.record.session import Session
from autoprof.record.session.table import (
    TABLE,
    TRANSITIONS,
    Event,
    Refused,
    State,
    step,
)

PAIRS = list(itertools.product(State, Event))


@pytest.mark.parametrize(("state", "event"), PAIRS, ids=lambda v: v.value)
def test_every_pair_has_actions_or_a_refusal_that_guesses_the_mistake(state, event):
    if (state, event) in TABLE:
        row = step(state, event)
        assert all(callable(getattr(Session, name, None)) for name in row.actions), row
        return
    with pytest.raises(Refused) as refused:
        step(state, event)
    message = str(refused.value)
    assert f"{event.value} refused in state {state.value}" in message
    assert "?" in message  # a guess at the mistake, asked of the user


def test_a_run_that_ends_is_stopped_handed_over_and_retired_in_that_order():
    for event in (Event.SCHEDULE_OVER, Event.STEP_FAILED, Event.FLUSH):
        actions = step(State.PROFILING, event).actions
        assert actions.index("_stop_profiler") < actions.index("_hand_over")
    for event in (Event.STEP_FAILED, Event.FLUSH):
        actions = step(State.PROFILING, event).actions
        assert actions[-2:] == ("_send_after_window", "_retire")
        assert step(State.PROFILING, event).to is State.DONE


def test_a_schedule_that_ends_times_the_calls_after_it_then_retires():
    """The window's end hands the run over but stays on the timed path; the calls after it
    (or a flush, or exit) send their times and retire the session."""
    over = step(State.PROFILING, Event.SCHEDULE_OVER)
    assert over.to is State.AFTER and "_hand_over" in over.actions
    assert "_retire" not in over.actions and "_send_after_window" not in over.actions
    for event in (Event.AFTER_TIMED, Event.FLUSH):
        row = step(State.AFTER, event)
        assert row.to is State.DONE and row.actions == ("_send_after_window", "_retire")
    assert step(State.AFTER, Event.NESTED).to is State.AFTER  # labelled, never refused


def test_an_abandoned_profiler_is_never_stopped_from_the_wrong_thread():
    for state in (State.PROFILING, State.STOP_ASKED):
        row = step(state, Event.ABANDON)
        assert "_stop_profiler" not in row.actions and "_hand_over" in row.actions


def test_recording_a_second_time_is_refused_with_the_recursion_guess():
    with pytest.raises(Refused, match="already recording: did you decorate a function that "
                                      "calls itself"):
        step(State.PROFILING, Event.START)
    with pytest.raises(Refused, match="already done"):
        step(State.DONE, Event.START)


def test_a_finished_session_never_leaves_done_and_a_fork_reaches_every_state():
    assert {to for (state, to) in TRANSITIONS if state is State.DONE} == {State.DONE}
    assert {to for (state, to) in TRANSITIONS if state is State.COVERED} == {State.COVERED}
    assert all((state, Event.FORKED) in TABLE for state in State)
    assert all((state, Event.FLUSH) in TABLE for state in State)  # flush is always safe


def test_a_session_enters_only_table_states(tmp_path, monkeypatch):
    """A session that cannot write its run folder retires through NO_RUN_FOLDER."""
    from autoprof.record.options import make_options

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    session = Session("t", make_options(out_dir=str(blocker), warmup=0), "q", None, None)
    done: list[bool] = []
    session.on_done = lambda: done.append(session.done)
    with pytest.warns(UserWarning, match="cannot write the run"):
        session.end(session.begin(), None)
    assert session.state is State.DONE and done == [True] and session.run_dir is None
