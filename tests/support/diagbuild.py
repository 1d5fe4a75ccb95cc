"""Hand-built events tables (docs/architecture.md's columns) and the same events as a Chrome
trace, so each diagnostics test can state a small scenario in a few lines.

`frame()` derives depth, parent, self time, step, launch_row and op_row the way the contract
defines them; `chrome()` gives the raw Kineto-style events for going through the real loader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
PID = 100


@dataclass
class Ev:
    name: str
    cat: str
    ts: float
    dur: float
    tid: int = 1
    stream: int = -1
    correlation: int = -1
    rank: int = 0
    args: dict[str, Any] = field(default_factory=dict)


def _text(values: list[str]) -> pd.Categorical:
    """A text column as the loader builds it (a categorical of sorted values), as analyses
    see it after a filter: with one category that no row has."""
    return pd.Categorical(values, categories=sorted(set(values) | {"~filtered-out"}))


class Trace:
    """Events of one or more ranks; times in microseconds."""

    def __init__(self) -> None:
        self.events: list[Ev] = []
        self._corr = 1000

    def cpu(self, name: str, ts: float, dur: float, cat: str = "cpu_op", rank: int = 0,
            **args: Any) -> Trace:
        self.events.append(Ev(name, cat, ts, dur, rank=rank, args=args))
        return self

    def step(self, n: int, ts: float, dur: float, rank: int = 0) -> Trace:
        return self.cpu(f"ProfilerStep#{n}", ts, dur, "user_annotation", rank)

    def launch(self, ts: float, dur: float, gpu_ts: float, gpu_dur: float,
               kernel: str = "kernel_a", api: str = "cudaLaunchKernel", gpu_cat: str = "kernel",
               stream: int = 7, rank: int = 0) -> Trace:
        """A runtime launch call and the GPU work it starts (linked by correlation)."""
        self._corr += 1
        cat = "cuda_driver" if api.startswith("cu") and not api.startswith("cuda") else \
            "cuda_runtime"
        self.events.append(Ev(api, cat, ts, dur, correlation=self._corr, rank=rank))
        self.events.append(Ev(kernel, gpu_cat, gpu_ts, gpu_dur, tid=stream, stream=stream,
                              correlation=self._corr, rank=rank))
        return self

    def gpu(self, name: str, ts: float, dur: float, cat: str = "kernel", stream: int = 7,
            rank: int = 0) -> Trace:
        """GPU work without a launch in the trace (queued before tracing began)."""
        self.events.append(Ev(name, cat, ts, dur, tid=stream, stream=stream, rank=rank))
        return self

    # --- the events table ------------------------------------------------------------------

    def frame(self) -> pd.DataFrame:
        evs = sorted(self.events, key=lambda e: (e.rank, e.ts))
        n = len(evs)
        lane = ["gpu" if e.cat in GPU_CATS else "cpu" for e in evs]
        ts = np.array([e.ts for e in evs], float)
        dur = np.array([e.dur for e in evs], float)
        end = ts + dur
        parent = np.full(n, -1, np.int64)
        depth = np.zeros(n, np.int64)
        self_us = dur.copy()
        stacks: dict[tuple[int, int], list[int]] = {}
        for i, e in enumerate(evs):
            if lane[i] != "cpu":
                continue
            stack = stacks.setdefault((e.rank, e.tid), [])
            while stack and end[stack[-1]] <= e.ts:
                stack.pop()
            if stack:
                parent[i] = stack[-1]
                depth[i] = len(stack)
                self_us[stack[-1]] -= e.dur
            stack.append(i)
        for i, e in enumerate(evs):
            if e.cat == "gpu_user_annotation":
                self_us[i] = 0.0
        step = np.full(n, -1, np.int64)
        for i, e in enumerate(evs):
            if lane[i] == "cpu" and e.name.startswith("ProfilerStep#"):
                number = int(e.name.split("#")[1])
                for j, f in enumerate(evs):
                    if lane[j] == "cpu" and f.rank == e.rank and ts[j] >= e.ts and end[j] <= end[i]:
                        step[j] = number
        launch_row = np.full(n, -1, np.int64)
        op_row = np.full(n, -1, np.int64)
        runtime = {(e.rank, e.correlation): i for i, e in enumerate(evs)
                   if lane[i] == "cpu" and e.correlation >= 0}
        for i, e in enumerate(evs):
            if lane[i] == "gpu" and (e.rank, e.correlation) in runtime:
                j = runtime[(e.rank, e.correlation)]
                launch_row[i] = j
                step[i] = step[j]
                p = parent[j]
                while p >= 0 and evs[p].cat != "cpu_op":
                    p = parent[p]
                op_row[i] = p
        return pd.DataFrame({
            "name": _text([e.name for e in evs]),
            "cat": _text([e.cat for e in evs]),
            "lane": _text(lane),
            "is_gpu_work": [e.cat in ("kernel", "gpu_memcpy", "gpu_memset") for e in evs],
            "pid": np.full(n, PID, np.int64),
            "tid": np.array([e.tid for e in evs], np.int64),
            "device": np.array([0 if lane[i] == "gpu" else -1 for i in range(n)], np.int64),
            "stream": np.array([e.stream for e in evs], np.int64),
            "ts_us": ts,
            "dur_us": dur,
            "end_us": end,
            "self_us": self_us,
            "depth": depth,
            "parent": parent,
            "step": step,
            "correlation": np.array([e.correlation for e in evs], np.int64),
            "external_id": np.full(n, -1, np.int64),
            "launch_row": launch_row,
            "op_row": op_row,
            "flops": np.full(n, np.nan),
            "input_dims": _text([json.dumps(e.args["dims"]) if "dims" in e.args else ""
                                 for e in evs]),
            "rank": np.array([e.rank for e in evs], np.int64),
        })

    # --- the same events as a Chrome trace ---------------------------------------------------

    def chrome(self, rank: int | None = None) -> dict[str, Any]:
        out = []
        for e in self.events:
            if rank is not None and e.rank != rank:
                continue
            gpu = e.cat in GPU_CATS
            args: dict[str, Any] = {}
            if e.correlation >= 0:
                args["correlation"] = e.correlation
            if gpu:
                args.update(device=0, stream=e.stream)
            if "dims" in e.args:
                args["Input Dims"] = e.args["dims"]
            out.append({"ph": "X", "cat": e.cat, "name": e.name, "ts": e.ts, "dur": e.dur,
                        "pid": 0 if gpu else PID, "tid": e.stream if gpu else e.tid,
                        "args": args})
        trace: dict[str, Any] = {"schemaVersion": 1, "traceEvents": out}
        if rank is not None:
            trace["distributedInfo"] = {"backend": "gloo", "rank": rank,
                                        "world_size": len({e.rank for e in self.events})}
        return trace

    def write(self, path: Path, rank: int | None = None) -> Path:
        path.write_text(json.dumps(self.chrome(rank)))
        return path


def matmul_like(steps: int = 4, cpu_step_us: float = 100.0, kernel_us: float = 2.0,
                launch_us: float = 8.0, first_step_us: float | None = None,
                start: float = 1000.0) -> Trace:
    """A loop of steps, each: an op that launches one kernel `kernel_us` long.

    GPU work is queued behind earlier work on the stream, as a real GPU would run it.
    """
    t = Trace()
    ts = start
    gpu_free = 0.0
    for i in range(steps):
        span = first_step_us if (i == 0 and first_step_us) else cpu_step_us
        t.step(i, ts, span)
        op_ts = ts + 0.1 * span
        t.cpu("aten::mm", op_ts, launch_us + 4.0)
        launch_ts = op_ts + 2.0
        k_ts = max(launch_ts + launch_us + 1.0, gpu_free)
        t.launch(launch_ts, launch_us, k_ts, kernel_us)
        gpu_free = k_ts + kernel_us
        ts += span
    return t


@dataclass
class FakeRun:
    """What `diagnose` and `summarize` read from a Run: events, manifest and a few names."""

    events: pd.DataFrame
    manifest: dict[str, Any] | None = None
    name: str = "fake"
    path: str = "fake"
    world_size: int = 1
    trace_paths: list[str] = field(default_factory=list)
    trace_metadata: list[dict[str, Any]] = field(default_factory=list)
    memory_events: pd.DataFrame | None = None

    @property
    def is_cuda(self) -> bool:
        """As `Run.is_cuda`: GPU rows, or a device in the manifest."""
        gpu = len(self.events) > 0 and bool((self.events["lane"] == "gpu").any())
        return gpu or bool((self.manifest or {}).get("device"))


def ids(run: Any) -> dict[str, Any]:
    """The run's diagnostics by id."""
    from autoprof.analysis.analysis import diagnose

    return {d.id: d for d in diagnose(run)}
