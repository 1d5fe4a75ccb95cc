"""The ``trigger`` key of a triggered window's manifest: why a watched function recorded
again, and which run is its healthy window (the first one, in the same folder of runs).

Written by the recording side (``autoprof.record.watch``), read by the analysis (the
summary's comparison). Reading is tolerant: a missing or garbled key is no trigger.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

KINDS = ("drift", "manual", "signal", "call", "peer")
RULES = ("shift", "escalation")  # how a drift was seen, besides the plain way
MAX_SAMPLES = 10_000  # step times read back per side at most (the watcher writes <= 50 + 20)
_RUN_ID = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")


@dataclass(frozen=True)
class TriggerRecord:
    """``kind``: drift, manual, signal or call; ``at_call``: the call that began the window
    (the function's calls counted from 1); ``baseline_ms`` and ``current_ms``: the step time
    of the baseline and of the last calls before it (None when not yet known);
    ``healthy_run_id``: the run folder beside this one it is compared with; ``window``: the
    triggered windows of this function so far, this one included; ``from_rank``: the rank
    whose drift or signal asked this one for a window (kind ``peer``; None otherwise);
    ``rule``: how a drift was seen besides the plain way (``shift``: the baseline learnt
    after the last window is above the level before it, the step changed while that window
    recorded; ``escalation``: a drift during the cool-down, above the last trigger's step
    time); ``baseline_step_us`` and ``recent_step_us``: the untraced step times behind
    ``baseline_ms`` and ``current_ms`` (µs, oldest first; empty in manifests of an older
    autoprof); ``threshold_pct``: the watch's threshold (None: not recorded)."""

    kind: str
    at_call: int
    baseline_ms: float | None
    current_ms: float | None
    healthy_run_id: str
    window: int = 1
    from_rank: int | None = None
    rule: str | None = None
    baseline_step_us: tuple[float, ...] = ()
    recent_step_us: tuple[float, ...] = ()
    threshold_pct: float | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["baseline_step_us"] = list(self.baseline_step_us)
        data["recent_step_us"] = list(self.recent_step_us)
        return data

    def describe(self) -> str:
        why = {"drift": "the step time drifted", "manual": "autoprof.trigger()",
               "signal": "a signal", "call": "the call number asked for",
               "peer": f"rank {self.from_rank} asked"}.get(self.kind, self.kind)
        if self.rule == "shift":
            why = "the step time shifted while the last window recorded"
        elif self.rule == "escalation":
            why = "the step time drifted further during the cool-down"
        text = f"{why}, at call {self.at_call}"
        if self.baseline_ms is not None and self.current_ms is not None:
            text += f": {self.current_ms:.3g} ms a step against {self.baseline_ms:.3g} ms"
        return text

    @classmethod
    def from_manifest(cls, extra: Mapping[str, Any]) -> TriggerRecord | None:
        """The record under ``extra["trigger"]``; None when absent or unusable (a run id
        that is not one, so no path can be made of it)."""
        raw = extra.get("trigger")
        if not isinstance(raw, Mapping):
            return None
        kind, at_call, healthy = raw.get("kind"), raw.get("at_call"), raw.get("healthy_run_id")
        if (kind not in KINDS or not isinstance(at_call, int) or isinstance(at_call, bool)
                or not isinstance(healthy, str) or not _RUN_ID.match(healthy)):
            return None
        window, rank, rule = raw.get("window"), raw.get("from_rank"), raw.get("rule")
        return cls(str(kind), at_call, _ms(raw.get("baseline_ms")), _ms(raw.get("current_ms")),
                   healthy, window if isinstance(window, int) and window > 0 else 1,
                   rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0
                   else None, rule if rule in RULES else None,
                   _samples(raw.get("baseline_step_us")), _samples(raw.get("recent_step_us")),
                   _ms(raw.get("threshold_pct")))


def _ms(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _samples(value: object) -> tuple[float, ...]:
    """Step times read back: a list of numbers, those finite and above zero kept (anything
    else is no samples)."""
    if not isinstance(value, list):
        return ()
    kept = (_ms(v) for v in value[:MAX_SAMPLES])
    return tuple(v for v in kept if v is not None and v > 0)
