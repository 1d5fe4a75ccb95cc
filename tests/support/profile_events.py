"""The events a short torch.profiler run of a few autograd steps writes, each as (name,
category, phase, its args but ``per_run``'s), counted: two runs that differ only in how the
profiler stops can be compared event for event."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.profiler as tp

PER_RUN = ("External id", "Record function id", "Ev Idx", "correlation", "Addr",
           "Python id", "Sequence number")  # ids that differ from one profile to the next


def profiled_events(path: Path, device: str, per_run: tuple[str, ...] = PER_RUN,
                    **options: Any) -> Counter[tuple[Any, ...]]:
    """Profile 3 active steps of ``(x @ w).relu().sum().backward()`` on ``device`` (with
    ``options`` for ``torch.profiler.profile``), write the trace to ``path``, and count it."""
    n = 256 if device == "cuda" else 16
    x = torch.randn(n, n, device=device, requires_grad=True)
    w = torch.randn(n, n, device=device, requires_grad=True)
    activities = [tp.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(tp.ProfilerActivity.CUDA)
    with tp.profile(activities=activities, record_shapes=True, with_flops=True,
                    schedule=tp.schedule(wait=0, warmup=1, active=3),
                    on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
                    **options) as prof:
        for _ in range(4):
            with tp.record_function("step"):
                (x @ w).relu().sum().backward()
            prof.step()
    trace = json.loads(path.read_text())
    return Counter(
        (e.get("name"), e.get("cat"), e.get("ph"),
         tuple(sorted((k, json.dumps(v)) for k, v in e.get("args", {}).items()
                      if k not in per_run)))
        for e in trace["traceEvents"])
