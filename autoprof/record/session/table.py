"""The session's states and the one table of what each event does in each state.

As torch.profiler's ``action_map`` maps (previous action, current action) to the calls to
make, :data:`TABLE` maps (state, event) to the next state and the names of the
:class:`~autoprof.record.session.core.Session` methods to run, in order: reading the table
tells what happens. A pair that is not in the table is refused: :func:`step` raises
:class:`Refused` with a message that guesses the mistake. No torch here.

The chain that ends a run (``_END``) reads: stop torch's profiler (exporting what it holds),
let the next session start its own, decide the status handed over, hand the run to its
finisher, say what was recorded, give SIGTERM back its previous handler, become a
pass-through. ``_ABANDON`` is the same chain without the stop: torch crashes when a thread other
than the one that started the profiler stops it. A schedule that runs to its end
(``_END_THEN_TIME``) leaves the pass-through for later: the first calls after the window are
timed (``AFTER``), and their times follow the run to its finisher before the session
retires.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class State(enum.Enum):
    WARMUP_CALLS = "warmup_calls"  # untraced, timed calls (``warmup_calls``)
    PROFILING = "profiling"  # torch.profiler runs on the owner thread, one step per call
    STOP_ASKED = "stop_asked"  # flushed from another thread: the owner stops at its next call
    AFTER = "after_window"  # the schedule ended: the next calls are timed, then DONE
    DONE = "done"  # pass-through: the run ended, failed, or was never started
    COVERED = "covered"  # retired inside another session's step: label only from then on


RECORDING = (State.PROFILING, State.STOP_ASKED)  # torch's profiler runs for the session


class Event(enum.Enum):
    START = "start"  # torch.profiler started on this thread
    START_FAILED = "start_failed"  # torch.profiler would not start (run folder open)
    NO_RUN_FOLDER = "no_run_folder"  # the run folder or its manifest could not be written
    WARMUP_FAILED = "warmup_failed"  # the user's function raised in a warm-up call
    NESTED = "nested"  # called inside another session's profiled step
    SCHEDULE_OVER = "schedule_over"  # the last step of the schedule ended
    STEP_FAILED = "step_failed"  # the user's function or torch's step raised
    INTERRUPTED = "interrupted"  # a step raised after recorded ones, or SIGTERM: partial
    FLUSH = "flush"  # flush on the owner thread (or no profiler to stop)
    ASK_OWNER = "ask_owner"  # flush from another thread while the owner still runs
    ABANDON = "abandon"  # flush at exit, or with the owner gone: torch cannot be stopped
    OWNER_CALLED = "owner_called"  # the owner's next call after a stop was asked
    OWNER_ENDED = "owner_ended"  # the owner thread ends (its thread-local guard is freed)
    FORKED = "forked"  # this process is a child made by os.fork()
    AFTER_TIMED = "after_timed"  # the calls after the window are timed (or no more come)


@dataclass(frozen=True)
class Step:
    """One row of the table: the state to enter, then the session methods to run, in
    order (``_retire`` last: it tells the decorator to swap in its pass-through wrapper)."""

    to: State
    actions: tuple[str, ...]


class Refused(RuntimeError):
    """An event that makes no sense in the session's state: a bug in autoprof or a misuse,
    caught by the call's guard and reported as one warning."""


# SIGTERM's handler goes last: a SIGTERM that waited for the window's end takes its previous
# meaning there, once the run is handed over
_ENDED = ("_stop_profiler", "_release_live", "_decide_status", "_hand_over", "_note_end",
          "_unguard_sigterm")
# the window ran to its end: the state is AFTER, and ``_time_after_window`` either waits
# for the next calls or (a region) fires AFTER_TIMED at once, which only AFTER accepts
_END_THEN_TIME = (*_ENDED, "_time_after_window")
_LAST = ("_send_after_window", "_retire")  # the calls after the window to the finisher
_END = (*_ENDED, *_LAST)  # ended early (flush, failure): DONE, nothing left to time
_ABANDON = ("_warn_abandoned", "_release_live", "_decide_status", "_hand_over", "_note_end",
            "_unguard_sigterm", *_LAST)
_DETACH = ("_detach", "_retire")

W, P, S, D, C = State.WARMUP_CALLS, State.PROFILING, State.STOP_ASKED, State.DONE, State.COVERED
A = State.AFTER
E = Event

TABLE: dict[tuple[State, Event], Step] = {
    (W, E.START): Step(P, ("_take_ownership", "_go_live", "_guard_sigterm")),
    (W, E.START_FAILED): Step(D, _END),
    (W, E.NO_RUN_FOLDER): Step(D, ("_retire",)),
    (W, E.WARMUP_FAILED): Step(D, _END),
    (W, E.NESTED): Step(C, ("_retire",)),
    (W, E.FLUSH): Step(W, ("_note_unrecorded",)),  # nothing to end: say what it needed
    (W, E.OWNER_ENDED): Step(W, ()),
    (W, E.FORKED): Step(D, _DETACH),
    (P, E.SCHEDULE_OVER): Step(A, _END_THEN_TIME),
    (P, E.STEP_FAILED): Step(D, _END),
    (P, E.INTERRUPTED): Step(D, _END),
    (P, E.FLUSH): Step(D, _END),
    (P, E.ASK_OWNER): Step(S, ("_leave_fast_path",)),
    (P, E.ABANDON): Step(D, _ABANDON),
    (P, E.OWNER_ENDED): Step(D, ("_warn_owner_ended", *_END)),
    (P, E.FORKED): Step(D, _DETACH),
    (S, E.OWNER_CALLED): Step(D, _END),
    (S, E.SCHEDULE_OVER): Step(A, _END_THEN_TIME),  # the step running when the stop was asked
    (S, E.STEP_FAILED): Step(D, _END),
    (S, E.INTERRUPTED): Step(D, _END),
    (S, E.FLUSH): Step(D, _END),
    (S, E.ASK_OWNER): Step(S, ()),  # asked again: the owner has not called since
    (S, E.ABANDON): Step(D, _ABANDON),
    (S, E.OWNER_ENDED): Step(D, ("_warn_owner_ended", *_END)),
    (S, E.FORKED): Step(D, _DETACH),
    (A, E.AFTER_TIMED): Step(D, _LAST),
    (A, E.NESTED): Step(A, ()),  # inside another session's step: labelled, not timed
    (A, E.FLUSH): Step(D, _LAST),  # flushed (or at exit) before the calls after it were timed
    (A, E.OWNER_ENDED): Step(A, ()),  # other threads' calls are timed too
    (A, E.FORKED): Step(D, _DETACH),
    (D, E.FLUSH): Step(D, ()),  # the run already ended: flush only waits for its finisher
    (D, E.OWNER_ENDED): Step(D, ()),
    (D, E.FORKED): Step(D, _DETACH),
    (C, E.FLUSH): Step(C, ()),
    (C, E.OWNER_ENDED): Step(C, ()),
    (C, E.FORKED): Step(C, _DETACH),
}

# state -> the likely mistake behind an event refused there (the message's second half)
_GUESSES: dict[State, str] = {
    W: "not recording yet: the profiler has not started, so there is no step to end or "
       "owner to ask (did a call end that never began, e.g. a region exited twice?)",
    P: "already recording: did you decorate a function that calls itself, or enter the same "
       "region inside itself? (nested calls only add their label)",
    S: "already stopping: a flush from another thread asked the owner thread to stop at its "
       "next call (did the same call begin twice?)",
    D: "already done: the run ended and later calls are pass-throughs (did you expect "
       "@autoprof to record again after its schedule? call autoprof.check for a new run)",
    A: "already done recording: the window ended and its next calls are only timed (did "
       "you expect @autoprof to record again after its schedule? call autoprof.check for "
       "a new run)",
    C: "already covered: this session's calls were recorded inside another session's run "
       "and only add their label (did you expect a run of its own? call it outside the "
       "other decorated function or region)",
}

TRANSITIONS: frozenset[tuple[State, State]] = frozenset(
    (state, row.to) for (state, _), row in TABLE.items())


def step(state: State, event: Event) -> Step:
    """The row for ``event`` in ``state``; raises :class:`Refused` when there is none."""
    row = TABLE.get((state, event))
    if row is None:
        raise Refused(f"autoprof: {event.value} refused in state {state.value}: "
                      f"{_GUESSES[state]}")
    return row
