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

How close: with one launch latency, stream gap and wake-up per trace ("median"
calibration) the unchanged replay is within 2.5% of every measured step of the committed H200
recordings (per-trace median at most 0.55%); "per_item" calibration reproduces them. A CUDA
graph over `traces/examples/eager_100` is replayed 12% shorter than the same kernels'
`graph_replay` run; on the seed (100 small matmul+add per call) it predicts 5.2x against the
5.8x of a graph made by hand (tests/analysis/replay/ pins these).

Compute kernels that the change makes overlap on several streams more than in the trace
share the GPU (processor sharing, `contention.py`). What it ignores: contention between
back-to-back kernels (every kernel otherwise keeps its measured duration: the same 200
kernels ran about 15% longer inside a CUDA graph than launched one by one), GPU clock
changes and cache warm-up, memory allocation stalls and the caching allocator's behaviour
under the change, dependencies between host threads other than through the main thread's
clock (a thread's waits on another are replayed as measured host time; a non-main thread's
idle time is dropped), the profiler's own cost unless `ScaleHost` (`fit_host_scale`,
`baseline.py`) undoes it (one factor for the whole host, or one for the call and one for
the caller's loop), work other ranks do (a collective keeps its
measured time, its wait for the other ranks included), which stream a sync or an event names
(inferred from the call order: `waits.py`), and what a fix changes beyond its record (a CUDA
graph's captured kernels keep their durations, but for those a data-dependent selection fed,
which its sync-free form runs on the whole tensor: `dense_form.py`; torch.compile's fusions
are not modelled).
"""

from autoprof.analysis.metrics.replay.changes import (
    GRAPH_KERNEL_GAP_US,
    GRAPH_KERNEL_HOST_US,
    GRAPH_LAUNCH_US,
    Change,
    CudaGraph,
    FasterKernels,
    HideLoader,
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
    "HideLoader",
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
