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
from autoprof.runfolder.watchfile import HOST_CLOCK

Kind = str  # "drift", "manual", "signal", "call", "peer": what triggered a window
# how a drift was seen besides the plain one: "shift" (the baseline learnt after a window is
# a level above the one before it: the step changed while the window recorded),
# "escalation" (a drift during the cool-down, above the last trigger's step time)
Rule = str
_NEVER = 1 << 62


@dataclass(frozen=True)
class Trigger:
    """Why a window starts: the kind, the call that begins it (counted from the function's
    first call), the baseline's and the recent step time (milliseconds; None while no
    baseline has been learnt); ``from_rank``: the rank whose drift asked for it (``peer``);
    ``rule``: how a drift was seen, when not the plain way (``shift``, ``escalation``);
    ``baseline_us`` and ``recent_us``: the step times behind the two (µs, oldest first: the
    ``baseline_calls`` normal calls the baseline is the median of, and the last
    ``drift_calls`` calls), copied when the window begins."""

    kind: Kind
    at_call: int
    baseline_ms: float | None
    current_ms: float | None
    from_rank: int | None = None
    rule: Rule | None = None
    baseline_us: tuple[int, ...] = ()
    recent_us: tuple[int, ...] = ()


class Watcher:
    """A watched function's step times, baseline and triggers (one per decorated function).
    Slots: every call reads a dozen of these (measured in ``benchmarks/watch_cost.py``)."""

    __slots__ = ("name", "watch", "calls", "first_window_calls", "home", "windows", "window",
                 "pending", "pending_from", "peer_seen", "opened", "timeline", "baseline_ns",
                 "_start_window", "_at_calls", "_next_at", "_tl_sum_ns", "_tl_count",
                 "_drift_calls", "_recent_ns", "_recent_i", "_ring_ns", "_ring_i", "_base_ns",
                 "_limit_ns",
                 "_over", "_last_ns", "_cool_until", "_prior_ns", "_prior_us", "_shift_ns",
                 "_escalate_ns", "__weakref__")
    clock = HOST_CLOCK  # what times the calls (watch.json says it)

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
        # the last window's: the baseline and its step times before it, the level the next
        # learnt baseline must stay under (else "shift"), and the step time a drift in its
        # cool-down must be above ("escalation"); None: no window yet, or nothing to compare
        self._prior_ns: float | None = None
        self._prior_us: tuple[int, ...] = ()
        self._shift_ns: float | None = None
        self._escalate_ns: float | None = None

    # -- the baseline -------------------------------------------------------------------

    def _relearn(self) -> None:
        """Forget the baseline: the next calls learn it (at the start, after a window)."""
        self._ring_ns: list[int] = []  # the normal calls since the baseline was last set
        self._ring_i = 0
        self._base_ns: list[int] = []  # the ``baseline_calls`` ones it is the median of
        self.baseline_ns: float | None = None
        self._limit_ns = float(_NEVER)
        self._over = 0
        self._last_ns: int | None = None  # the previous call's start: none yet

    def _relimit(self) -> bool:
        """Every ``baseline_calls`` normal calls: the baseline is their median again. The
        first one learnt after a window, above the level before the window by more than the
        threshold, is a drift that happened while it recorded (rule ``shift``): True when
        that begins a window. The ring's calls are kept as the baseline's (the two lists
        swap: the next ``baseline_calls`` normal calls overwrite the other one)."""
        self._ring_i = 0
        ring = self._ring_ns
        baseline = self.baseline_ns = statistics.median(ring)
        self._base_ns, self._ring_ns = ring, self._base_ns
        self._limit_ns = baseline * (1.0 + self.watch.threshold_pct / 100.0)
        shift, self._shift_ns = self._shift_ns, None
        return shift is not None and baseline > shift and self._begin("drift", rule="shift")

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
        return self._observe(now_ns - last)

    def _observe(self, period_ns: int) -> bool:
        """One call's step time (ns): into the timeline, the recent ring and the baseline's
        ring or the drift count; True when a window begins with the call in progress."""
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
            if j >= self.watch.baseline_calls and self._relimit():
                return True
            if self._over:
                self._over -= 1
            return False
        self._over += 1
        if self._over >= self._drift_calls:
            return self._drift()
        return False

    def _drift(self) -> bool:
        """``drift_calls`` more slow calls than normal ones: a window, unless in the
        cool-down, where only an escalation (the recent step time above the last trigger's
        by more than the threshold) begins one; the count starts again either way."""
        if self.calls >= self._cool_until:
            return self._begin("drift")
        self._over = 0
        limit, recent = self._escalate_ns, self._recent()
        if limit is None or not recent or statistics.median(recent) <= limit:
            return False
        return self._begin("drift", rule="escalation")

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

    def _begin(self, kind: Kind, from_rank: int | None = None, rule: Rule | None = None) -> bool:
        """A window begins, if ``max_windows`` and ``start_window`` allow it. The step times
        behind the trigger are copied here, once a window (never per call). A ``shift`` is
        against the baseline before the last window, the others against the baseline now."""
        self._over = 0
        if self.windows >= self.watch.max_windows:
            return False
        recent = self._recent()
        current_ns = statistics.median(recent) if recent else None
        ring_us = () if self.baseline_ns is None else _us(self._base_ns)
        base_ns, base_us = ((self._prior_ns, self._prior_us) if rule == "shift"
                            else (self.baseline_ns, ring_us))
        trigger = Trigger(kind, self.calls, _ms(base_ns), _ms(current_ns), from_rank, rule,
                          base_us, _us(recent))
        if not self._start_window(trigger):
            return False
        self.windows += 1
        grow = 1.0 + self.watch.threshold_pct / 100.0
        level = max(self.baseline_ns or 0.0, current_ns or 0.0)
        self._prior_ns, self._prior_us = self.baseline_ns, ring_us
        self._shift_ns = level * grow if level > 0 else None
        self._escalate_ns = None if current_ns is None else current_ns * grow
        return True

    def _recent(self) -> list[int]:
        """The last ``drift_calls`` step times, oldest first (those timed so far)."""
        i, ring = self._recent_i, self._recent_ns
        return [p for p in ring[i:] + ring[:i] if p > 0]

    def window_over(self, calls: int) -> None:
        """The triggered window ended after ``calls`` calls besides the one that began it
        (counted here): learn the baseline afresh (a ``shift`` when it is above the level
        before the window), only an escalation a drift during the cool-down."""
        self.calls += max(0, calls)
        self.window = None
        self._restart_clock()
        self._relearn()
        self._recent_ns = [0] * self.watch.drift_calls
        self._recent_i = 0
        self._cool_until = self.calls + self.watch.cooldown_calls

    def _restart_clock(self) -> None:
        """The calls timed so far end with a window (the host clock keeps nothing)."""

    def ask(self, kind: Kind, from_rank: int | None = None) -> None:
        """A manual, signal or peer trigger: the next call begins a window (dropped while one
        records)."""
        if self.window is None:
            self.pending, self.pending_from = kind, from_rank


def _ms(value_ns: float | None) -> float | None:
    return None if value_ns is None else round(value_ns / 1e6, 6)


def _us(values_ns: list[int]) -> tuple[int, ...]:
    return tuple(round(v / 1e3) for v in values_ns)
