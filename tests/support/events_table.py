"""The one events-table builder for tests: Kineto-style events in, the loader's own table out.

``events_table(events)`` writes the events (one trace per rank) as the Kineto JSON the
profiler writes and reads them back with the loader's own code (``loader.formats``,
``build_events``, ``merge.combine``), so nesting, self time, steps, ``launch_row`` and
``op_row`` are derived exactly as for a real trace, never re-derived here.

| name | cat | ts | dur | tid | args |      | name | parent | depth | self_us | step |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| ProfilerStep#1 | user_annotation | 0 | 10 | 1 | | -> | ProfilerStep#1 | -1 | 0 | 6 | 1 |
| aten::mm | cpu_op | 1 | 4 | 1 | | | aten::mm | 0 | 1 | 4 | 1 |
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.loader import formats
from autoprof.analysis.loader.events import build_events, empty_events
from autoprof.analysis.loader.merge import combine

CPU_PID = 100
GPU_PID = 0  # the device id is the pid of GPU rows in Kineto traces


def kineto_event(name: str, cat: str, ts: float, dur: float, *, tid: int = 1,
                 pid: int = CPU_PID, **args: Any) -> dict[str, Any]:
    """One complete ('X') event as torch.profiler writes it."""
    event: dict[str, Any] = {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur,
                             "pid": pid, "tid": tid}
    if args:
        event["args"] = args
    return event


def events_table(events: Iterable[Mapping[str, Any]] | Mapping[int, Iterable[Mapping[str, Any]]]
                 ) -> pd.DataFrame:
    """The loader's events table of ``events`` (a list: rank 0; or ``{rank: events}``)."""
    by_rank = dict(events) if isinstance(events, Mapping) else {0: events}
    frames = []
    with tempfile.TemporaryDirectory() as tmp:
        for rank, rank_events in sorted(by_rank.items()):
            path = Path(tmp) / f"rank{rank}.pt.trace.json"
            path.write_text(json.dumps({"schemaVersion": 1,
                                        "traceEvents": [dict(e) for e in rank_events]}))
            table = build_events(formats.read(path), rank=rank)
            frames.append(table.assign(rank=np.full(len(table), rank, dtype=np.int64)))
    frames = [f for f in frames if len(f)]
    return combine(frames) if frames else empty_events()
