"""What the map keeps of one rank: a small record, cached beside the rank's trace.

A rank's trace may hold millions of events; what the run's answer needs of it is a few
kilobytes: its row of the rank table (metrics/ranks.py: step time, compute and collective
time, exposed communication, GPU busy, verdict), its breakdown (mean step and buckets), its
verdict, its top ops, its memory peaks and the time of each of its steps (its CPU span, and
the breakdown's step time, which the Ranks page's rank x step heatmap shows). ``RankResult`` is
that record; it round-trips through JSON (``to_json`` / ``from_json``) so that a second open
reads it back instead of the trace.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

# bump when the fields or their meaning change: older cached records are then recomputed
FORMAT_VERSION = 2


@dataclass(frozen=True)
class RankResult:
    """One rank analysed on its own (``autoprof.analysis.scale.rank_map.analyse_rank``)."""

    rank: int
    trace: str
    events: int  # rows of the rank's events table
    row: dict[str, Any]  # its rank_table row (metrics/ranks.RANK_COLUMNS)
    breakdown: dict[str, Any]  # Breakdown.mean() without per_step: step_us, buckets_us/_pct
    verdict: str
    verdict_reason: str
    top_ops: dict[str, list[dict[str, Any]]]
    memory_peaks: list[dict[str, Any]] | None  # per device, None without memory events
    step_times_us: list[float]  # each profiled step's CPU span, in step order
    world_size: int = 1
    warnings: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)  # the breakdown's step numbers
    step_us: list[float] = field(default_factory=list)  # and each one's time (Breakdown)

    @property
    def exposed_comm_pct(self) -> float:
        return float(self.row.get("exposed_comm_pct") or 0.0)

    @property
    def step_time_us_median(self) -> float:
        value = self.row.get("step_time_us_median")
        return float(value) if value is not None else math.nan

    def to_json(self) -> str:
        return json.dumps({"format_version": FORMAT_VERSION, **asdict(self)}, allow_nan=True)

    @classmethod
    def from_json(cls, text: str) -> RankResult | None:
        """The record in ``text``, or None when it is of another format version or malformed
        (a field missing, extra or of the wrong type)."""
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict) or raw.pop("format_version", None) != FORMAT_VERSION:
                return None
            if not _well_typed(raw):
                return None
            return cls(**raw)
        except (ValueError, TypeError, RecursionError):
            return None


_NUMBER = (int, float)
# each field's JSON type, and its items' type for a list (None: any)
_FIELDS: dict[str, tuple[type | tuple[type, ...], type | tuple[type, ...] | None]] = {
    "rank": (int, None), "trace": (str, None), "events": (int, None), "row": (dict, None),
    "breakdown": (dict, None), "verdict": (str, None), "verdict_reason": (str, None),
    "top_ops": (dict, list), "memory_peaks": ((list, type(None)), dict),
    "step_times_us": (list, _NUMBER), "world_size": (int, None), "warnings": (list, str),
    "steps": (list, int), "step_us": (list, _NUMBER),
}


def _well_typed(raw: dict[str, Any]) -> bool:
    """Does ``raw`` hold every field of a RankResult, and only those, each of its type?"""
    if set(raw) != set(_FIELDS):
        return False
    for name, (kind, item) in _FIELDS.items():
        value = raw[name]
        if not isinstance(value, kind) or isinstance(value, bool):
            return False
        if item is not None and not all(isinstance(v, item) for v in _items(raw[name])):
            return False
    return bool(raw["events"] >= 0 and raw["world_size"] >= 0)


def _items(value: Any) -> Iterable[Any]:
    """A list's items, a dict's values; nothing for None."""
    return value.values() if isinstance(value, dict) else value or ()
