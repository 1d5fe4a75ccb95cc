"""Small traces whose breakdown is known by construction, as events tables.

`Trace` takes CPU rows (with a thread), launches and GPU work; `frame()` is the loader's own
events table of them (support/events_table.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from support.events_table import CPU_PID, GPU_PID, events_table, kineto_event

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
        """The loader's events table of these events (support/events_table.py)."""
        by_rank: dict[int, list[dict[str, Any]]] = {}
        for e in self.events:
            gpu = e.cat in GPU_CATS
            args = {"correlation": e.correlation} if e.correlation >= 0 else {}
            by_rank.setdefault(e.rank, []).append(kineto_event(
                e.name, e.cat, e.ts, e.dur, tid=e.stream if gpu else e.tid,
                pid=GPU_PID if gpu else CPU_PID, **args))
        return events_table(by_rank)


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
