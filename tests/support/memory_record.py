"""Record small CPU traces with known allocations (torch.profiler, profile_memory=True)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

MIB = 1024**2
KEEP = 4 * MIB  # allocated in "keep" and held to the end (a leak when leak=True)
TEMP = 2 * MIB  # allocated in "temp", freed at the end of its step, outside any region
SCRATCH = 1 * MIB  # allocated and freed inside "scratch", nested in "outer"


def record(path: Path, steps: int = 3, leak: bool = True) -> Path:
    """``steps`` ProfilerStep#N spans; in each: keep, temp, then scratch inside outer.

    Live bytes at a step's end: start + KEEP (leak) or start (no leak). With the leak the
    step's peak is start + KEEP + TEMP + SCRATCH, reached inside "scratch"; without, it is
    start + KEEP (keep is freed before temp is allocated).
    """
    kept: list[torch.Tensor] = []
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for step in range(steps):
            step_span = record_function(f"ProfilerStep#{step}")  # as torch's schedule marks it
            step_span.__enter__()
            with record_function("keep"):
                big = torch.empty(KEEP, dtype=torch.uint8)
            if leak:
                kept.append(big)
            del big
            with record_function("temp"):
                temp = torch.empty(TEMP, dtype=torch.uint8)
            with record_function("outer"), record_function("scratch"):
                scratch = torch.empty(SCRATCH, dtype=torch.uint8)
                del scratch
            del temp
            step_span.__exit__(None, None, None)
    prof.export_chrome_trace(str(path))
    return path


def record_plain(path: Path) -> Path:
    """The same kind of work without profile_memory: no memory events."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for step in range(2):
            with record_function(f"ProfilerStep#{step}"), record_function("keep"):
                torch.empty(KEEP, dtype=torch.uint8)
    prof.export_chrome_trace(str(path))
    return path
