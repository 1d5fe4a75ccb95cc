"""Hand-built events tables (docs/architecture.md's columns) and the same events as a Chrome
trace, so each diagnostics test can state a small scenario in a few lines.

`chrome()` gives the Kineto-style events; `frame()` is the loader's own events table of them
(support/events_table.py), so no nesting is derived here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from support.events_table import events_table

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


FILTERED_OUT = "~filtered-out"  # sorts after every name the tests use


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
        """The loader's own events table of ``chrome()`` (support/events_table.py), each text
        column with one category no row has, as analyses see a table after a filter."""
        ranks = sorted({e.rank for e in self.events}) or [0]
        table = events_table({r: self.chrome(r)["traceEvents"] for r in ranks})
        for column in ("name", "cat", "lane", "input_dims"):
            table[column] = table[column].cat.add_categories([FILTERED_OUT])
        return table

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
            if "seq" in e.args:  # autograd's sequence number (grad mode recorded the op)
                args["Sequence number"] = e.args["seq"]
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
