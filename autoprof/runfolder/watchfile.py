"""``watch.json``: a watched function's step time over all its calls and its triggered
windows, in the healthy (first) window's run folder.

Written by the recording side (``autoprof.record.watch.timeline``), read by the viewer.
Reading is tolerant: a missing, oversized or garbled file, or a bad point, is left out.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoprof.runfolder.files import MANIFEST

WATCH_FILE = "watch.json"
MAX_WATCH_BYTES = 4 * 1024 * 1024
HOST_CLOCK, DEVICE_CLOCK = "host", "cuda events"  # what timed the calls (key "clock")
CLOCKS = (HOST_CLOCK, DEVICE_CLOCK)


@dataclass(frozen=True)
class Marked:
    """A triggered window: the call that began it, what triggered it, its run id (None while
    it records) and its calls."""

    at_call: int
    kind: str
    run_id: str | None
    calls: int | None


@dataclass(frozen=True)
class WatchLog:
    name: str
    healthy_run_id: str
    calls: int
    first_window_calls: int
    width_calls: int
    points: tuple[tuple[int, float], ...]  # (first call, mean step time in ms)
    windows: tuple[Marked, ...]
    clock: str = HOST_CLOCK  # older files: the host


def find(run_dir: Path) -> Path | None:
    """The ``watch.json`` a run belongs to: its own, or its healthy window's (a triggered
    window's manifest names it); None when there is none."""
    own = run_dir / WATCH_FILE
    if own.is_file():
        return own
    try:
        raw = json.loads((run_dir / MANIFEST).read_text())
        healthy = raw.get("trigger", {}).get("healthy_run_id")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(healthy, str) or "/" in healthy or healthy in ("", ".", ".."):
        return None
    other = run_dir.parent / healthy / WATCH_FILE
    return other if other.is_file() else None


def read(path: Path) -> WatchLog | None:
    try:
        if path.stat().st_size > MAX_WATCH_BYTES:
            return None
        raw = json.loads(path.read_text())
        return _parse(raw) if isinstance(raw, dict) else None
    except (OSError, ValueError, TypeError):
        return None


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _parse(raw: dict[str, Any]) -> WatchLog:
    points = tuple((int(p[0]), float(p[1])) for p in raw.get("points", [])
                   if isinstance(p, list) and len(p) == 2 and isinstance(p[0], int)
                   and isinstance(p[1], int | float) and math.isfinite(p[1]))
    windows = tuple(Marked(_int(w.get("at_call")), str(w.get("kind", "?")),
                           w["run_id"] if isinstance(w.get("run_id"), str) else None,
                           w["calls"] if isinstance(w.get("calls"), int) else None)
                    for w in raw.get("windows", []) if isinstance(w, dict))
    return WatchLog(str(raw.get("name", "")), str(raw.get("healthy_run_id", "")),
                    _int(raw.get("calls")), _int(raw.get("first_window_calls")),
                    _int(raw.get("width_calls"), 1), points, windows,
                    raw["clock"] if raw.get("clock") in CLOCKS else HOST_CLOCK)
