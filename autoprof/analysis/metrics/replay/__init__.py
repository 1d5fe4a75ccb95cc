"""The replayed step: each profiler step's dependency graph, replayed with a cause changed.

The model (after Daydream, USENIX ATC 2020, and Lumos, MLSys 2025): the host side of a step is
the runtime calls of every thread in measured order with the measured host time between them;
each launch puts its GPU work on its stream's queue; a kernel starts at the later of its
launch's end plus the launch latency and the end of the previous work on its stream (plus
the gap between back-to-back items), and after the work a cross-stream event wait names; a
sync ends at the later of its own cost and the end of the work it waits for plus a wake-up.
GPU work launched before a step starts belongs to the step before it; work launched before
the trace keeps its measured times. Changing a cause (`Change`: a CUDA graph over a region, a
sync removed, the time between calls overlapped, copies made non_blocking, kernels made
faster, host costs scaled) edits those costs and waits, and the step is replayed again.
`predict_speedup` is the unchanged replay's step time over the changed one, so the replay's
own error cancels to first order.

What it ignores: contention between streams (concurrent kernels keep their measured
durations), GPU clock changes and the warm-up of caches, memory allocation stalls and the
caching allocator's behaviour under the change, dependencies between host threads other than
through the main thread's clock (a thread's waits on another are replayed as measured host
time), the profiler's own cost unless `ScaleHost` undoes it, work other ranks do (a
collective keeps its measured time, its wait for the other ranks included), and what a fix
changes beyond its record (a CUDA graph's captured kernels keep their durations; torch.compile's
fusions are not modelled).
"""

from autoprof.analysis.metrics.replay.changes import (
    GRAPH_KERNEL_GAP_US,
    GRAPH_KERNEL_HOST_US,
    GRAPH_LAUNCH_US,
    Change,
    CudaGraph,
    FasterKernels,
    NonBlockingCopies,
    OverlapBetweenCalls,
    RemoveSync,
    ScaleHost,
)
from autoprof.analysis.metrics.replay.graph import Graph, build_graph
from autoprof.analysis.metrics.replay.replay import (
    ReplayResult,
    Spread,
    fit_host_scale,
    predict_speedup,
    predict_speedups,
    replay_error,
    replay_step,
    replay_steps,
)
from autoprof.analysis.metrics.replay.simulate import Calibration

__all__ = [
    "GRAPH_KERNEL_GAP_US",
    "GRAPH_KERNEL_HOST_US",
    "GRAPH_LAUNCH_US",
    "Calibration",
    "Change",
    "CudaGraph",
    "FasterKernels",
    "Graph",
    "NonBlockingCopies",
    "OverlapBetweenCalls",
    "RemoveSync",
    "ReplayResult",
    "ScaleHost",
    "Spread",
    "build_graph",
    "fit_host_scale",
    "predict_speedup",
    "predict_speedups",
    "replay_error",
    "replay_step",
    "replay_steps",
]
