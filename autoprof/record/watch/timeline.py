"""The step time of a watched function over all its calls, in bounded memory, and the file
the viewer draws it from.

Every watched call's step time goes into the bucket in progress (a sum and a count); a full
bucket (``width`` step times) becomes one point, the mean step time of those calls. At
``MAX_POINTS`` points, neighbours merge in pairs and ``width`` doubles: a job of any length
keeps at most ``MAX_POINTS`` points, each the mean of ``width`` consecutive step times
(none spans a window: the calls of a window are not step times of the job's pace). The file
``watch.json`` in the healthy window's run folder holds the points and the triggered windows
(where they began, what triggered them, their run ids); it is written when a window begins
and ends and at exit. Plain Python, no torch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autoprof.runfolder.watchfile import WATCH_FILE

MAX_POINTS = 512
SCHEMA = 1


@dataclass
class Timeline:
    """The points so far: ``first_calls[i]`` is the first call of point i, ``mean_ms[i]``
    its mean step time over ``width`` calls; the bucket in progress is ``_sum_ns`` over
    ``_count`` step times."""

    width: int = 1
    first_calls: list[int] = field(default_factory=list)
    mean_ms: list[float] = field(default_factory=list)
    windows: list[dict[str, Any]] = field(default_factory=list)
    _sum_ns: int = 0
    _count: int = 0
    _first: int = 0

    def add(self, call: int, period_ns: int) -> None:
        """The step time that ended at call ``call`` (its number, counted from 1). The
        watcher keeps the bucket in progress itself (cheaper per call) and :meth:`push`-es
        it; this is the same, for one step time."""
        if not self._count:
            self._first = call
        self._sum_ns += period_ns
        self._count += 1
        if self._count >= self.width:
            self.cut()

    def push(self, first_call: int, sum_ns: int, count: int) -> None:
        """A bucket of ``count`` step times from call ``first_call`` on, summing ``sum_ns``."""
        self.first_calls.append(first_call)
        self.mean_ms.append(sum_ns / count / 1e6)
        if len(self.mean_ms) >= MAX_POINTS:
            self._merge()

    def _merge(self) -> None:
        """Neighbours in pairs: half the points, each twice as wide (an odd last one kept)."""
        means = self.mean_ms
        self.first_calls = self.first_calls[::2]
        self.mean_ms = [(means[i] + means[i + 1]) / 2 if i + 1 < len(means) else means[i]
                        for i in range(0, len(means), 2)]
        self.width *= 2

    def cut(self) -> None:
        """A window begins: the bucket in progress becomes a point (a narrower one), so no
        point spans the window."""
        if self._count:
            self.push(self._first, self._sum_ns, self._count)
            self._sum_ns = self._count = 0

    def as_json(self, name: str, healthy_run_id: str, calls: int,
                window_calls: int) -> dict[str, Any]:
        return {"schema": SCHEMA, "name": name, "healthy_run_id": healthy_run_id,
                "calls": calls, "first_window_calls": window_calls, "width_calls": self.width,
                "points": [[c, round(m, 6)] for c, m in zip(self.first_calls, self.mean_ms,
                                                             strict=True)],
                "windows": list(self.windows)}


def write(run_dir: Path, data: dict[str, Any]) -> None:
    """``watch.json`` in ``run_dir``, whole or not at all (a temp file renamed); a folder
    that cannot be written is let be (the watch goes on)."""
    path = run_dir / WATCH_FILE
    temp = run_dir / f".{WATCH_FILE}.{os.getpid()}.tmp"
    try:
        temp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        os.replace(temp, path)
    except OSError:
        pass
