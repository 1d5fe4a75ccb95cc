"""Small traces whose breakdown is known by construction, as events tables.

`Trace` takes CPU rows (with a thread), launches and GPU work; `frame()` derives parent,
depth, self time, step, launch_row and op_row the way the loader does (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
WORK_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


@dataclass
class Ev:
    name: str
    cat: str
    ts: float
    dur: float
    tid: int = 1
    rank: int = 0
    stream: int = -1
    correlation: int = -1


@dataclass
class Trace:
    events: list[Ev] = field(default_factory=list)
    _corr: int = 1000

    def cpu(self, name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = 1,
            rank: int = 0) -> Trace:
        self.events.append(Ev(name, cat, ts, dur, tid=tid, rank=rank))
        return self

    def region(self, name: str, ts: float, dur: float, tid: int = 1, rank: int = 0) -> Trace:
        return self.cpu(name, ts, dur, "user_annotation", tid, rank)

    def step(self, n: int, ts: float, dur: float, rank: int = 0) -> Trace:
        return self.region(f"ProfilerStep#{n}", ts, dur, rank=rank)

    def launch(self, ts: float, dur: float, gpu_ts: float, gpu_dur: float,
               kernel: str = "gemm_kernel", gpu_cat: str = "kernel", api: str = "cudaLaunchKernel",
               stream: int = 7, tid: int = 1, rank: int = 0) -> Trace:
        self._corr += 1
        self.events.append(Ev(api, "cuda_runtime", ts, dur, tid=tid, rank=rank,
                              correlation=self._corr))
        self.events.append(Ev(kernel, gpu_cat, gpu_ts, gpu_dur, tid=stream, rank=rank,
                              stream=stream, correlation=self._corr))
        return self

    def item(self, ts: float, dur: float, on_device: bool = True, tid: int = 1) -> Trace:
        """`aten::item` > `_local_scalar_dense` (> the copy and the stream sync on a device)."""
        self.cpu("aten::item", ts, dur, tid=tid)
        self.cpu("aten::_local_scalar_dense", ts + 0.5, dur - 1.0, tid=tid)
        if on_device:
            self.cpu("cudaMemcpyAsync", ts + 1.0, 2.0, "cuda_runtime", tid=tid)
            self.cpu("cudaStreamSynchronize", ts + 3.5, dur - 5.0, "cuda_runtime", tid=tid)
        return self

    def frame(self) -> pd.DataFrame:
        evs = sorted(self.events, key=lambda e: (e.rank, e.ts, -e.dur))
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
        step = np.full(n, -1, np.int64)
        for i, e in enumerate(evs):
            if lane[i] == "cpu" and e.name.startswith("ProfilerStep#"):
                num = int(e.name.split("#")[1])
                inside = [j for j, f in enumerate(evs) if lane[j] == "cpu" and f.rank == e.rank
                          and ts[j] >= e.ts and end[j] <= end[i]]
                step[inside] = num
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
        text = {c: pd.Categorical(v) for c, v in (
            ("name", [e.name for e in evs]), ("cat", [e.cat for e in evs]), ("lane", lane))}
        return pd.DataFrame({
            **text,
            "is_gpu_work": [e.cat in WORK_CATS for e in evs],
            "pid": np.full(n, 100, np.int64),
            "tid": np.array([e.tid for e in evs], np.int64),
            "device": np.array([0 if lane[i] == "gpu" else -1 for i in range(n)], np.int64),
            "stream": np.array([e.stream for e in evs], np.int64),
            "ts_us": ts, "dur_us": dur, "end_us": end, "self_us": self_us,
            "depth": depth, "parent": parent, "step": step,
            "correlation": np.array([e.correlation for e in evs], np.int64),
            "external_id": np.full(n, -1, np.int64),
            "launch_row": launch_row, "op_row": op_row,
            "flops": np.full(n, np.nan),
            "input_dims": pd.Categorical([""] * n), "input_types": pd.Categorical([""] * n),
            "rank": np.array([e.rank for e in evs], np.int64),
        })


@dataclass
class FakeRun:
    events: pd.DataFrame
    manifest: dict[str, object] | None = None
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
