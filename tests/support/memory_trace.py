"""Hand-written Kineto traces with [memory] events (CUDA ones, which a CPU box cannot record)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GIB = 1024**3
PID, TID = 10, 11


def x(name: str, ts: float, dur: float, cat: str = "user_annotation") -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur,
            "args": {}}


def mem(ts: float, size: int, allocated: int, reserved: int, addr: int,
        device: int = 0) -> dict[str, Any]:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID,
            "tid": TID, "ts": ts,
            "args": {"Total Reserved": reserved, "Total Allocated": allocated, "Bytes": size,
                     "Device Id": device, "Device Type": 1 if device >= 0 else 0,
                     "Addr": addr, "finished": False}}


def write(path: Path, events: list[dict[str, Any]], capacity: int | None = None) -> Path:
    doc: dict[str, Any] = {"schemaVersion": 1, "traceEvents": events}
    if capacity is not None:
        doc["deviceProperties"] = [{"id": 0, "name": "Test GPU", "totalGlobalMem": capacity}]
    path.write_text(json.dumps(doc, indent=1))
    return path


def cuda_steps(steps: int, allocs_per_step: int, size: int, held: int = 0,
               reserved: int | None = None) -> list[dict[str, Any]]:
    """``steps`` steps in region "work", each ``allocs_per_step`` alloc/free pairs of ``size``
    bytes on cuda:0 above ``held`` bytes allocated before the trace."""
    events: list[dict[str, Any]] = []
    span = 10.0 * allocs_per_step + 10
    for s in range(steps):
        t0 = 1000.0 + s * (span + 5)
        events += [x(f"ProfilerStep#{s}", t0, span), x("work", t0 + 1, span - 2)]
        for i in range(allocs_per_step):
            t = t0 + 2 + 10 * i
            res = reserved if reserved is not None else held + size
            events.append(mem(t, size, held + size, res, 4096 + i))
            events.append(mem(t + 5, -size, held, res, 4096 + i))
    return events
