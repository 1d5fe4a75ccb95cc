"""The watcher's step times, baseline and triggers, on a clock the tests drive (no torch, no
profiler): a drift starts a window within its ``drift_calls`` of the step change and not
before, scattered slow calls never do, the cool-down and the cap hold, a call number, a
manual trigger and SIGUSR2 each start one at the next call."""

from __future__ import annotations

import os
import signal

import pytest

from autoprof.record.watch import Watch, signals
from autoprof.record.watch.watcher import Trigger, Watcher
from autoprof.runfolder.trigger import TriggerRecord

STEP_NS = 1_000_000  # a 1 ms step


class Clock:
    """Drives a watcher: each call starts ``period_ns`` after the last one."""

    def __init__(self, watch: Watch, calls_before: int = 0, accept: bool = True) -> None:
        self.started: list[Trigger] = []
        self.accept = accept
        self.watcher = Watcher("f", watch, calls_before, self._start)
        self.now_ns = 0

    def _start(self, trigger: Trigger) -> bool:
        if self.accept:
            self.started.append(trigger)
        return self.accept

    def calls(self, n: int, period_ns: int = STEP_NS) -> list[int]:
        """Make ``n`` calls; the call numbers that began a window (then ended at once)."""
        began = []
        for _ in range(n):
            self.now_ns += period_ns
            if self.watcher.tick(self.now_ns):
                began.append(self.watcher.calls)
                self.watcher.window_over(0)
        return began


def test_a_step_change_starts_one_window_within_its_drift_calls():
    watch = Watch(drift_calls=10, baseline_calls=20, threshold_pct=20.0, cooldown_calls=10_000)
    clock = Clock(watch, calls_before=14)
    assert clock.calls(200) == []  # steady: never
    assert clock.watcher.baseline_ns == STEP_NS
    began = clock.calls(100, period_ns=2 * STEP_NS)
    change_at = 14 + 200 + 1
    assert len(began) == 1  # then the cool-down
    assert change_at <= began[0] < change_at + watch.drift_calls
    (trigger,) = clock.started
    assert trigger.kind == "drift" and trigger.at_call == began[0]
    assert trigger.baseline_ms == pytest.approx(1.0)
    assert trigger.current_ms == pytest.approx(2.0)


def test_slow_calls_among_normal_ones_never_start_a_window():
    clock = Clock(Watch(drift_calls=10, baseline_calls=20))
    clock.calls(40)
    for _ in range(300):  # one call in three is 5x slower: a noisy loop, no drift
        assert clock.calls(2) == []
        assert clock.calls(1, period_ns=5 * STEP_NS) == []
    assert clock.started == []


def test_a_slowdown_below_the_threshold_is_not_a_drift():
    clock = Clock(Watch(drift_calls=10, baseline_calls=20, threshold_pct=20.0))
    clock.calls(60)
    assert clock.calls(500, period_ns=int(1.15 * STEP_NS)) == []


def test_the_cool_down_and_the_cap():
    watch = Watch(drift_calls=5, baseline_calls=10, cooldown_calls=100, max_windows=2)
    clock = Clock(watch)
    clock.calls(30)
    began = clock.calls(20, period_ns=3 * STEP_NS)
    assert len(began) == 1
    # the window over, the slow step becomes the baseline: a second change is needed
    clock.calls(200, period_ns=3 * STEP_NS)
    later = clock.calls(200, period_ns=9 * STEP_NS)
    assert len(later) == 1 and later[0] - began[0] >= watch.cooldown_calls
    clock.calls(200, period_ns=9 * STEP_NS)
    assert clock.calls(400, period_ns=30 * STEP_NS) == []  # the cap: two windows
    assert clock.watcher.windows == 2


def test_a_call_number_starts_a_window_at_that_call():
    clock = Clock(Watch(at_calls=(5, 40, 41)), calls_before=14)  # 5: already past
    assert clock.calls(60) == [40, 41]
    assert [t.kind for t in clock.started] == ["call", "call"]


def test_a_manual_trigger_begins_at_the_next_call_and_is_counted_against_the_cap():
    clock = Clock(Watch(max_windows=1))
    clock.calls(3)
    clock.watcher.ask("manual")
    assert clock.calls(1) == [4] and clock.started[0].kind == "manual"
    clock.watcher.ask("manual")
    assert clock.calls(5) == []  # the cap


def test_a_refused_window_is_not_counted():
    clock = Clock(Watch(at_calls=(3,)), accept=False)
    assert clock.calls(5) == [] and clock.watcher.windows == 0


def test_the_calls_of_a_window_are_counted():
    clock = Clock(Watch(at_calls=(3, 30)))
    assert clock.calls(3) == [3]
    clock.watcher.window_over(13)  # the window took 13 calls more
    assert clock.calls(14) == [30]


@pytest.mark.skipif(not hasattr(signal, "SIGUSR2"), reason="no SIGUSR2 here")
def test_sigusr2_and_trigger_reach_every_watcher(monkeypatch):
    monkeypatch.setattr(signals, "_installed", False)
    previous = signal.getsignal(signal.SIGUSR2)
    try:
        signal.signal(signal.SIGUSR2, signal.SIG_DFL)
        a, b = Clock(Watch()), Clock(Watch())
        signals.register(a.watcher)
        signals.register(b.watcher)
        os.kill(os.getpid(), signal.SIGUSR2)  # handled before the next bytecodes
        assert a.calls(1) == [1] and b.calls(1) == [1]
        assert a.started[0].kind == b.started[0].kind == "signal"
        assert signals.trigger("f") >= 2
        assert a.calls(1) == [2] and a.started[1].kind == "manual"
    finally:
        signal.signal(signal.SIGUSR2, previous)


def test_a_handler_of_the_programs_own_is_left_alone(monkeypatch):
    monkeypatch.setattr(signals, "_installed", False)
    previous = signal.getsignal(signal.SIGUSR2)
    mine = lambda signum, frame: None  # noqa: E731
    try:
        signal.signal(signal.SIGUSR2, mine)
        signals.register(Clock(Watch()).watcher)
        assert signal.getsignal(signal.SIGUSR2) is mine
    finally:
        signal.signal(signal.SIGUSR2, previous)


@pytest.mark.parametrize("bad", [{"drift_calls": 0}, {"threshold_pct": -1}, {"at_calls": [0]},
                                 {"max_windows": True}, {"nope": 1}])
def test_bad_watch_options_are_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        Watch.coerce(bad)


def test_watch_coerce():
    assert Watch.coerce(True) == Watch() and Watch.coerce(False) is None
    assert Watch.coerce({"at_calls": 7}).at_calls == (7,)


RUN_ID = "20260101-000000-abcdef"


@pytest.mark.parametrize("raw", [None, "x", {"kind": "drift"},
                                 {"kind": "other", "at_call": 3, "healthy_run_id": RUN_ID},
                                 {"kind": "drift", "at_call": 3, "healthy_run_id": "../../etc"}])
def test_a_garbled_trigger_key_is_no_trigger(raw):
    assert TriggerRecord.from_manifest({"trigger": raw}) is None


def test_a_trigger_record_reads_back():
    record = TriggerRecord("drift", 120, 1.0, float("nan"), "20260101-000000-abcdef", 2)
    again = TriggerRecord.from_manifest({"trigger": record.to_json()})
    assert again is not None and again.current_ms is None and again.at_call == 120
