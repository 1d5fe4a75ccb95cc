"""``@autoprof(watch=...)``: the options of watching a function after its first window.

``watch=True`` takes the defaults; a dict or a :class:`Watch` sets them. Plain data, no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

WATCH_CLOCKS = ("auto", "host")  # what times a watched call: the device where CUDA ran, or the host
_INT_KEYS = ("drift_calls", "baseline_calls", "cooldown_calls", "max_windows")


@dataclass(frozen=True)
class Watch:
    """How a watched function is timed after its first window, and when it records again.

    Every call's start is timed without a profiler and without a device sync: the time from
    one call's start to the next one's is the job's step time, its loop (the loader, the
    logging) included, on the host clock. ``clock="auto"`` (the default) reads it on the
    device instead where
    the first window recorded CUDA work: a CUDA event recorded on the current stream at each
    call's start, read once the device has passed the next one (``query``, never a sync), so
    a step the device paces is timed at the device's pace and not at the host's, which runs
    ahead until a sync (a loss logged every 50 calls) pays for every call before it at once
    (:mod:`.device_pace`); ``clock="host"`` keeps the host clock.
    The baseline is the median of the last ``baseline_calls`` step times
    that were not above it by more than ``threshold_pct`` (so a slowdown never becomes its own
    baseline), recomputed every ``baseline_calls`` calls. A drift is ``drift_calls`` such
    calls above it more than below it (a counter that counts up on a call above the limit and
    down on one below it: a few slow calls among normal ones never reach it). After a
    triggered window the baseline is learnt afresh from the calls that follow it. Two rules
    then keep a change from hiding behind the last one: the first baseline learnt after a
    window, above the level before it (the larger of the baseline then and the step time
    that triggered it) by more than ``threshold_pct``, is a drift that happened while the
    window recorded (rule ``shift``, at the call it is learnt, compared with the baseline
    before the window); during the ``cooldown_calls`` calls after a window, a drift begins a
    window only when the recent step time is above the one that triggered the last window by
    more than ``threshold_pct`` (rule ``escalation``), so a step flapping between two levels
    records once. ``max_windows`` bounds the triggered windows of the function, whatever
    triggered them. ``at_calls``: call numbers (the function's calls, counted from 1)
    that start a window. ``signal``: SIGUSR2 starts a window (installed from the main thread,
    only where the program has no handler of its own for it). ``max_trace_mb``: the most
    trace a window may record (uncompressed, on one rank). A triggered window's is predicted
    from the healthy window's trace per recorded step; its schedule's ``active`` (then
    ``repeat``) steps are cut to fit, and a window whose one step would not fit is not
    recorded (:mod:`.budget`). The first window's is measured from its first recorded step,
    and the window ends after the steps that fit (``autoprof.record.session.budget_fit``);
    ``max_host_mb`` likewise, for the host memory its events take while it records.
    ``peers``: under torch.distributed, a drift or a signal on one rank asks every other rank
    for a window too (kind ``peer``, :mod:`.peers`).
    """

    threshold_pct: float = 20.0
    drift_calls: int = 20
    baseline_calls: int = 50
    cooldown_calls: int = 1000
    max_windows: int = 3
    at_calls: tuple[int, ...] = ()
    signal: bool = True
    max_trace_mb: float = 256.0
    max_host_mb: float = 4096.0
    peers: bool = True
    clock: str = "auto"

    def __post_init__(self) -> None:
        if self.clock not in WATCH_CLOCKS:
            raise ValueError(f"Watch.clock must be one of {list(WATCH_CLOCKS)}, got {self.clock!r}")
        for key in _INT_KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Watch.{key} must be an int >= 0, got {value!r}")
        if self.drift_calls < 1 or self.baseline_calls < 1:
            raise ValueError("Watch.drift_calls and Watch.baseline_calls must be >= 1")
        pct = self.threshold_pct
        if isinstance(pct, bool) or not isinstance(pct, int | float) or not pct > 0:
            raise ValueError(f"Watch.threshold_pct must be a number > 0, got {pct!r}")
        for key in ("max_trace_mb", "max_host_mb"):
            budget = getattr(self, key)
            if isinstance(budget, bool) or not isinstance(budget, int | float) or not budget > 0:
                raise ValueError(f"Watch.{key} must be a number > 0, got {budget!r}")
        bad = [c for c in self.at_calls if isinstance(c, bool) or not isinstance(c, int) or c < 1]
        if bad:
            raise ValueError(f"Watch.at_calls must be call numbers >= 1, got {bad}")

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["at_calls"] = list(self.at_calls)
        return data

    @classmethod
    def coerce(cls, value: object) -> Watch | None:
        """``True`` -> the defaults; ``False``/``None`` -> not watched; a dict -> its keys."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, Watch):
            return value
        if isinstance(value, Mapping):
            known = set(cls.__dataclass_fields__)
            unknown = sorted(set(value) - known)
            if unknown:
                raise ValueError(f"unknown watch keys {unknown}; Watch takes {sorted(known)}")
            data = dict(value)
            if "at_calls" in data:
                calls = data["at_calls"]
                data["at_calls"] = (calls,) if isinstance(calls, int) else tuple(calls)
            return cls(**data)
        raise TypeError(f"watch must be True, a dict or autoprof.Watch, got {type(value).__name__}")
