"""Run one measurement in a fresh Python process and collect what it reports.

The child prints one JSON object on its last stdout line (``emit``), which carries the
child's own peak resident memory: ``VmHWM`` of the child itself and ``getrusage`` of the
processes it waited for (HTA forks a parser process), so one measurement never sees
another's memory (see ``child_peak_rss_mb`` for why not ``getrusage`` of the child itself).
The larger of the two is kept (not their sum, which favours a baseline that forks).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Sample:
    """What one fresh process reported, plus its peak RSS and wall time."""

    values: dict[str, Any]
    peak_rss_mb: float
    wall_s: float
    end_unix: float  # when the process had exited (its pipes closed), time.time()


class MeasureError(RuntimeError):
    """A measurement process failed; the message names the command and its stderr tail."""


class MeasureTimeout(MeasureError):
    """A measurement ran past its limit; what it had reached is kept as lower bounds."""

    def __init__(self, message: str, timeout_s: float, peak_rss_mb: float) -> None:
        super().__init__(message)
        self.timeout_s = timeout_s
        self.peak_rss_mb = peak_rss_mb  # VmHWM read just before the kill (nan if unknown)


def proc_status_mb(pid: int | str, field: str) -> float:
    """A memory field of ``/proc/<pid>/status`` (``VmHWM``: peak RSS so far, ``VmRSS``: RSS
    now; pid ``"self"`` for this process), in MiB; nan if unreadable (not Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return float("nan")


class TreeRss:
    """The largest RSS of this process and all its descendants together, sampled every
    ``every_s`` while the ``with`` block runs (Linux; nan elsewhere): the memory a load that
    starts helper processes takes at once, where ``child_peak_rss_mb`` gives the largest
    single process."""

    def __init__(self, every_s: float = 0.02) -> None:
        self.every_s = every_s
        self.peak_mb = float("nan")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            total = sum(proc_status_mb(pid, "VmRSS") for pid in _tree(str(os.getpid())))
            if not math.isnan(total):
                self.peak_mb = total if math.isnan(self.peak_mb) else max(self.peak_mb, total)
            if self._stop.wait(self.every_s):
                return


def _tree(pid: str) -> list[str]:
    """``pid`` and its descendants (``/proc/<pid>/task/*/children``)."""
    found, todo = [], [pid]
    while todo:
        at = todo.pop()
        found.append(at)
        for task in Path(f"/proc/{at}/task").glob("*/children"):
            try:
                todo += task.read_text().split()
            except OSError:
                pass
    return found


def run_child(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    cwd: str | None = None,
) -> Sample:
    """Run ``argv`` in a fresh process; return its last JSON line, peak RSS and wall time."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env, cwd=cwd,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        peak = proc_status_mb(proc.pid, "VmHWM")
        proc.kill()
        proc.communicate()
        raise MeasureTimeout(f"{' '.join(argv)}: timed out after {timeout_s:.0f} s",
                             timeout_s, peak) from None
    wall_s = time.perf_counter() - t0
    end_unix = time.time()
    if proc.returncode != 0:
        tail = "\n".join(err.strip().splitlines()[-15:])
        raise MeasureError(f"{' '.join(argv)}: exit status {proc.returncode}\n{tail}")
    lines = [line for line in out.strip().splitlines() if line.startswith("{")]
    if not lines:
        raise MeasureError(f"{' '.join(argv)}: printed no JSON result line")
    values = json.loads(lines[-1])
    peak = float(values.pop("_peak_rss_mb", float("nan")))
    return Sample(values=values, peak_rss_mb=peak, wall_s=wall_s, end_unix=end_unix)


def child_peak_rss_mb() -> float:
    """Peak RSS of the calling process and of the children it waited for, in MiB (Linux).

    The process's own peak is ``VmHWM``, not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux
    carries ``ru_maxrss`` across ``execve`` from the memory of the process that spawned it
    (Python's subprocess starts children with vfork, so that is the runner's own peak), so
    every child of a runner that had once grown to 195 MB reported at least 195 MB. A
    child's ``ru_maxrss`` (RUSAGE_CHILDREN) starts at most at this process's own peak, so
    the larger of the two is still the largest single process."""
    import resource

    own = proc_status_mb("self", "VmHWM")
    if math.isnan(own):  # no /proc (not Linux): the best there is
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    return max(own, kids)


def emit(values: dict[str, Any]) -> None:
    """Print the child's result line (with its peak RSS) for ``run_child`` to read."""
    values = dict(values)
    values["_peak_rss_mb"] = child_peak_rss_mb()
    sys.stdout.write(json.dumps(values) + "\n")
    sys.stdout.flush()


@dataclass
class Stats:
    """Median, min and max of one quantity over repeated fresh processes."""

    median: float
    min: float
    max: float
    n: int
    values: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats:
        vals = [float(v) for v in values]
        if not vals:
            return cls(float("nan"), float("nan"), float("nan"), 0, [])
        return cls(statistics.median(vals), min(vals), max(vals), len(vals), vals)

    def as_dict(self) -> dict[str, Any]:
        return {"median": self.median, "min": self.min, "max": self.max, "n": self.n,
                "values": self.values}
