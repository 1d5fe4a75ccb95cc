"""The watching of one function after its first window: a step time per call against a
rolling baseline, and the triggers that start one more window. Plain Python, no torch.

:meth:`Watcher.tick` runs at the start of every watched call with the host clock already
read, and does a handful of comparisons (the cost is measured in
``benchmarks/watch_cost.py``); it returns True when this call begins a window. What a window
is, the watcher does not know: ``start_window`` (given by :mod:`autoprof.record.watch.window`)
opens it and returns whether it did.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autoprof.record.watch.config import Watch
from autoprof.record.watch.timeline import Timeline

Kind = str  # "drift", "manual", "signal", "call", "peer": what triggered a window
_NEVER = 1 << 62


@dataclass(frozen=True)
class Trigger:
    """Why a window starts: the kind, the call that begins it (counted from the function's
    first call), the baseline's and the recent step time (milliseconds; None while no
    baseline has been learnt); ``from_rank``: the rank whose drift asked for it (``peer``)."""

    kind: Kind
    at_call: int
    baseline_ms: float | None
    current_ms: float | None
    from_rank: int | None = None


class Watcher:
    """A watched function's step times, baseline and triggers (one per decorated function).
    Slots: every call reads a dozen of these (measured in ``benchmarks/watch_cost.py``)."""

    __slots__ = ("name", "watch", "calls", "first_window_calls", "home", "windows", "window",
                 "pending", "pending_from", "peer_seen", "opened", "timeline", "baseline_ns",
                 "_start_window", "_at_calls", "_next_at", "_tl_sum_ns", "_tl_count",
                 "_drift_calls", "_recent_ns", "_recent_i", "_ring_ns", "_ring_i", "_limit_ns",
                 "_over", "_last_ns", "_cool_until", "__weakref__")

    def __init__(self, name: str, watch: Watch, calls_before: int,
                 start_window: Callable[[Trigger], bool]) -> None:
        self.name = name
        self.watch = watch
        self.calls = calls_before  # the function's calls so far (the watched ones included)
        self.first_window_calls = calls_before  # the first window's (warm-up, steps, after)
        self.home: Path | None = None  # the healthy run folder (watch.json goes there)
        self.windows = 0  # triggered windows opened
        self.window: object | None = None  # the window in progress (window.py's object)
        self.pending: Kind | None = None  # a manual or signal trigger waiting for a call
        self.pending_from: int | None = None  # the rank that asked (a ``peer`` trigger)
        self.peer_seen = 0  # the other ranks' asks read so far (record.watch.peers)
        self.opened: list[object] = []  # every triggered window's session, in order
        self._start_window = start_window
        self._at_calls = sorted(c for c in set(watch.at_calls) if c > calls_before)
        self._next_at = self._at_calls.pop(0) if self._at_calls else _NEVER
        self.timeline = Timeline()  # every step time, in bounded memory (the viewer's)
        self._tl_sum_ns = self._tl_count = 0  # its bucket in progress (kept here: per call)
        self._drift_calls = watch.drift_calls
        self._recent_ns = [0] * watch.drift_calls  # every call's step time, a ring
        self._recent_i = 0
        self._relearn()
        self._cool_until = 0

    # -- the baseline -------------------------------------------------------------------

    def _relearn(self) -> None:
        """Forget the baseline: the next calls learn it (at the start, after a window)."""
        self._ring_ns: list[int] = []
        self._ring_i = 0
        self.baseline_ns: float | None = None
        self._limit_ns = float(_NEVER)
        self._over = 0
        self._last_ns: int | None = None  # the previous call's start: none yet

    def _relimit(self) -> None:
        """Every ``baseline_calls`` normal calls: the baseline is their median again."""
        self._ring_i = 0
        baseline = self.baseline_ns = statistics.median(self._ring_ns)
        self._limit_ns = baseline * (1.0 + self.watch.threshold_pct / 100.0)

    # -- one call -----------------------------------------------------------------------

    def tick(self, now_ns: int) -> bool:
        """A watched call starts at ``now_ns`` (perf_counter_ns): count it, time the step
        since the last one, and say whether a window begins with it."""
        calls = self.calls = self.calls + 1
        last, self._last_ns = self._last_ns, now_ns
        if self.pending is not None or calls >= self._next_at:
            return self._manual_or_call()
        if last is None:
            return False
        period_ns = now_ns - last
        self._tl_sum_ns += period_ns  # the timeline's bucket in progress
        self._tl_count += 1
        if self._tl_count >= self.timeline.width:
            self.cut_timeline()
        i = self._recent_i
        self._recent_ns[i] = period_ns
        self._recent_i = i + 1 if i + 1 < self._drift_calls else 0
        if period_ns <= self._limit_ns:  # a normal call: into the baseline's ring (inline)
            ring, j = self._ring_ns, self._ring_i
            if j < len(ring):
                ring[j] = period_ns
            else:
                ring.append(period_ns)
            self._ring_i = j = j + 1
            if j >= self.watch.baseline_calls:
                self._relimit()
            if self._over:
                self._over -= 1
            return False
        self._over += 1
        if self._over >= self._drift_calls and calls >= self._cool_until:
            return self._begin("drift")
        return False

    def cut_timeline(self) -> None:
        """The timeline's bucket in progress becomes a point (full, or a window begins)."""
        if self._tl_count:
            self.timeline.push(self.calls - self._tl_count + 1, self._tl_sum_ns,
                               self._tl_count)
            self._tl_sum_ns = self._tl_count = 0

    def _manual_or_call(self) -> bool:
        if self.calls >= self._next_at:
            self._next_at = self._at_calls.pop(0) if self._at_calls else _NEVER
            kind = "call"
        else:
            kind = self.pending or "manual"
        from_rank, self.pending, self.pending_from = self.pending_from, None, None
        return self._begin(kind, from_rank)

    def _begin(self, kind: Kind, from_rank: int | None = None) -> bool:
        self._over = 0
        if self.windows >= self.watch.max_windows:
            return False
        trigger = Trigger(kind, self.calls, _ms(self.baseline_ns), self._current_ms(),
                          from_rank)
        if not self._start_window(trigger):
            return False
        self.windows += 1
        return True

    def _current_ms(self) -> float | None:
        recent = [p for p in self._recent_ns if p > 0]
        return _ms(statistics.median(recent)) if recent else None

    def window_over(self, calls: int) -> None:
        """The triggered window ended after ``calls`` calls besides the one that began it
        (counted here): learn the baseline afresh, drift not looked for during the
        cool-down."""
        self.calls += max(0, calls)
        self.window = None
        self._relearn()
        self._recent_ns = [0] * self.watch.drift_calls
        self._recent_i = 0
        self._cool_until = self.calls + self.watch.cooldown_calls

    def ask(self, kind: Kind, from_rank: int | None = None) -> None:
        """A manual, signal or peer trigger: the next call begins a window (dropped while one
        records)."""
        if self.window is None:
            self.pending, self.pending_from = kind, from_rank


def _ms(value_ns: float | None) -> float | None:
    return None if value_ns is None else round(value_ns / 1e6, 6)
