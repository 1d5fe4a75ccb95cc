"""The watcher's rules after a window, on a clock the tests drive (no torch): a level shift
that happens while a window records is a drift at the baseline learnt after it (``shift``);
a drift during the cool-down above the last trigger's step time is one (``escalation``);
a step time flapping between two levels is not; ``max_windows`` holds over all of them. And
each trigger carries the untraced step times behind it, copied when its window begins."""

from __future__ import annotations

import statistics

import pytest

from autoprof.record.watch import Watch
from autoprof.record.watch.watcher import Trigger, Watcher
from autoprof.runfolder.trigger import TriggerRecord

MS = 1_000_000
WATCH = Watch(threshold_pct=20.0, drift_calls=20, baseline_calls=50, cooldown_calls=1000)
WINDOW_CALLS = 48  # a window's calls, none of them ticked (as the decorator's wrapper does)


class Job:
    """Drives a watcher as the decorator does: a window takes ``WINDOW_CALLS`` calls that the
    watcher does not time, then ``window_over``."""

    def __init__(self, watch: Watch = WATCH) -> None:
        self.watcher = Watcher("f", watch, 10, self._start)
        self.started: list[Trigger] = []
        self.now_ns = 0
        self.in_window = 0

    def _start(self, trigger: Trigger) -> bool:
        self.started.append(trigger)
        return True

    def steps(self, periods_ms: list[float]) -> list[int]:
        """One call a step time; the calls that began a window."""
        began = []
        for period in periods_ms:
            self.now_ns += int(period * MS)
            if self.in_window:
                self.in_window -= 1
                if not self.in_window:
                    self.watcher.window_over(WINDOW_CALLS)
                continue
            if self.watcher.tick(self.now_ns):
                began.append(self.watcher.calls)
                self.in_window = WINDOW_CALLS
        return began

    def level(self, ms: float, n: int) -> list[int]:
        return self.steps([ms * (1 + 0.02 * ((i * 7) % 5 - 2)) for i in range(n)])


def test_a_shift_while_a_window_records_is_a_drift_at_the_relearnt_baseline():
    job = Job()
    assert job.level(1.4, 200) == []
    first: list[int] = []
    while not first:  # a small drift of its own (+29%) begins a window
        first = job.level(1.8, 1)
    job.level(1.8, 10)  # the window's first calls, then 9x from within it on
    assert job.in_window
    began = job.level(13.0, 300)
    assert len(began) == 1, job.started
    shifted = job.started[1]
    assert shifted.kind == "drift" and shifted.rule == "shift"
    # at the call where the baseline after the window is learnt: its calls, then one
    window_end = first[0] + WINDOW_CALLS
    assert window_end < began[0] <= window_end + 1 + WATCH.baseline_calls + 1
    before = job.started[0]
    assert shifted.baseline_ms == before.baseline_ms  # against the level before the window
    assert shifted.current_ms == pytest.approx(13.0, rel=0.05)
    assert shifted.baseline_us == before.baseline_us and len(shifted.recent_us) == 20
    assert min(shifted.recent_us) > 12_000


def test_the_same_level_after_a_window_is_no_shift():
    job = Job()
    job.level(1.3, 200)
    assert len(job.level(2.0, 100)) == 1  # the change, recorded
    assert job.level(2.0, 900) == []  # the relearnt baseline is the level that triggered


def test_an_escalation_during_the_cool_down_triggers():
    job = Job()
    job.level(1.0, 200)
    assert len(job.level(2.0, 200)) == 1
    began = job.level(6.0, 200)  # three times the triggering level, well within the cool-down
    assert len(began) == 1 and began[0] < job.started[0].at_call + WATCH.cooldown_calls
    escalated = job.started[1]
    assert escalated.rule == "escalation"
    assert escalated.current_ms == pytest.approx(6.0, rel=0.05)
    assert escalated.baseline_ms == pytest.approx(2.0, rel=0.05)


def test_a_step_flapping_between_two_levels_triggers_once():
    job = Job()
    job.level(1.0, 200)
    began = []
    for _ in range(4):  # 800 calls, within the cool-down of the first trigger
        began += job.level(2.0, 100)
        began += job.level(1.0, 100)
    assert len(began) == 1, job.started


def test_max_windows_holds_over_shifts_and_escalations():
    job = Job(Watch(threshold_pct=20.0, drift_calls=20, baseline_calls=50,
                    cooldown_calls=1000, max_windows=1))
    job.level(1.0, 200)
    job.level(1.4, 100)
    assert job.watcher.windows == 1
    assert job.level(9.0, 300) == []  # a shift past the cap
    assert job.level(40.0, 300) == []  # an escalation past it
    assert len(job.started) == 1


def test_the_step_times_behind_a_trigger_are_bounded_and_round_trip():
    job = Job()
    job.level(1.0, 300)
    job.level(1.5, 100)
    (trigger,) = job.started
    assert len(trigger.baseline_us) == WATCH.baseline_calls
    assert len(trigger.recent_us) == WATCH.drift_calls
    assert all(950 <= us <= 1050 for us in trigger.baseline_us)  # µs, rounded
    # exactly the calls the baseline is the median of (µs rounding aside)
    assert statistics.median(trigger.baseline_us) / 1e3 == pytest.approx(trigger.baseline_ms,
                                                                        abs=1e-3)
    assert all(1425 <= us <= 1575 for us in trigger.recent_us)
    record = TriggerRecord(trigger.kind, trigger.at_call, trigger.baseline_ms,
                           trigger.current_ms, "20260101-000000-abcdef",
                           baseline_step_us=trigger.baseline_us,
                           recent_step_us=trigger.recent_us, threshold_pct=20.0)
    again = TriggerRecord.from_manifest({"trigger": record.to_json()})
    assert again == record


@pytest.mark.parametrize("garbled", ["x", [1, "a", -3, float("nan"), None, True], {"a": 1}])
def test_garbled_step_times_read_as_none_or_the_good_ones(garbled):
    raw = {"kind": "drift", "at_call": 3, "healthy_run_id": "20260101-000000-abcdef",
           "baseline_step_us": garbled, "recent_step_us": [5, 6], "rule": "bogus"}
    record = TriggerRecord.from_manifest({"trigger": raw})
    assert record is not None and record.rule is None and record.recent_step_us == (5, 6)
    assert record.baseline_step_us == (() if not isinstance(garbled, list) else (1,))
