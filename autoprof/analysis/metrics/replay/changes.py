"""The changes a replay accepts: one small frozen record per fix, and the `Change` union.

Each record names what it changes in the replayed graph; `transform.apply_changes` turns a
list of them into the host costs, GPU durations and waits the simulator uses. Changes compose
(a CUDA graph over the call and the host costs scaled), applied in the order given.

The CUDA-graph constants:

- `GRAPH_LAUNCH_US` (2.5 us): the host cost of one `cudaGraphLaunch` outside the profiler.
  An assumption of a few microseconds (the order NVIDIA's CUDA Graphs material gives), not
  measured here: the profiled launches in `traces/examples/graph_replay` take about 300 us
  for 200 kernels, because the profiler instruments every node.
- `GRAPH_KERNEL_HOST_US` (0.01 us): the host cost each captured kernel adds to that launch;
  an assumption (a graph launch grows slowly with its node count).
- `GRAPH_KERNEL_GAP_US` (0.29 us): the median gap between consecutive kernels of one
  replayed graph on an H200, measured in `traces/examples/graph_replay` (10th-90th
  percentile 0.22-0.32 us).
- `COPY_BANDWIDTH_SHARE` (0.74): the share of the device's datasheet bandwidth a
  device-to-device copy of a graphed call's inputs reaches, counting the bytes read and
  written: measured without a profiler on an H200 (`benchmarks/gpu/input_copy_cost.py`,
  benchmarks/results-h200-input-copy-cost.json), the median over copies of 16, 32 and 64 MiB
  (0.71, 0.74, 0.80; 0.84-0.87 at 128-256 MiB; under 8 MiB the copies were shorter than the
  host's launch and the loop timed the host).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GRAPH_LAUNCH_US = 2.5
GRAPH_KERNEL_HOST_US = 0.01
GRAPH_KERNEL_GAP_US = 0.29
COPY_BANDWIDTH_SHARE = 0.74
OPTIMIZER_STEP_PREFIX = "Optimizer.step#"  # torch.optim's step region: Optimizer.step#AdamW.step

CopyDirection = Literal["HtoD", "DtoH"]


@dataclass(frozen=True)
class CudaGraph:
    """The GPU work launched inside `region` replayed as one CUDA graph per region span.

    `region`: the name of a host row (a `record_function` region, the decorated call, an
    op); None: each whole profiler step. Inside a span the host's own time (a DataLoader's
    fetch excepted: its CPU work stays) and each launch's cost are gone; the span's first
    launch costs `launch_us` plus `per_kernel_us` per kernel captured, and the captured
    kernels start `kernel_gap_us` after the one before them on their stream (or the launch
    latency after the graph launch). `input_copy_us` (0: none): each span first copies
    the batch into the graph's static inputs, a copy call costing the host one launch and
    the GPU `input_copy_us` before the captured kernels (`input_copy_us()`).

    What a user must change to capture the span at all is part of the fix: a sync inside a
    span (other than a host-to-device copy of the batch, which the static inputs' copy
    replaces) loses its wait and is captured as a launch, and a data-dependent selection's
    compaction and sort-based scatter there go (`cuda_graph.SELECTION_MACHINERY`: the
    sync-free form, `torch.where`, computes on the whole tensor instead), with `sync_free`
    (False: every sync kept with its wait, a region that syncs not captured whole); an
    Adam/AdamW step whose step counts live on the host runs its capturable form's added
    kernels (`capturable.py`, `capturable_optimizer`)."""

    region: str | None = None
    launch_us: float = GRAPH_LAUNCH_US
    per_kernel_us: float = GRAPH_KERNEL_HOST_US
    kernel_gap_us: float = GRAPH_KERNEL_GAP_US
    input_copy_us: float = 0.0
    sync_free: bool = True
    capturable_optimizer: bool = True


def input_copy_us(input_bytes: int | None, peak_gbps: float | None) -> float:
    """The GPU time of copying `input_bytes` into a graph's static inputs (read and written
    at `COPY_BANDWIDTH_SHARE` of `peak_gbps`); 0 when either is unknown."""
    if not input_bytes or not peak_gbps or peak_gbps <= 0:
        return 0.0
    return 2.0 * input_bytes / (COPY_BANDWIDTH_SHARE * peak_gbps * 1e3)


@dataclass(frozen=True)
class RemoveSync:
    """The host no longer waits at the syncs under an op named `op` (the sync call itself, or
    any row above it: `aten::item`, `aten::nonzero`, a region); None: at every sync. The sync
    call keeps its own, non-waiting cost; the GPU work it waited for stays."""

    op: str | None = None


@dataclass(frozen=True)
class RemoveSelection:
    """A data-dependent selection's line removed (`selection.py`): the op holding its sync
    and every op computing on the selection, forward and backward, lose their host time,
    their launches' cost, their GPU work and their waits."""


@dataclass(frozen=True)
class RemoveSpans:
    """Host spans the fix deletes (each from `starts_us[i]` to `ends_us[i]`, the trace's
    clock): the host time inside them and the calls made there, with their cost, GPU work and
    waits (a layout transpose's launch, a gradient's zeroing, a host tensor's copy)."""

    starts_us: tuple[float, ...]
    ends_us: tuple[float, ...]


@dataclass(frozen=True)
class FoldBiasAdd:
    """`x @ w + b` written `torch.addmm(b, x, w)`: each bias add right after a matrix
    product goes, host, launch and kernel, with the interpreter's dispatch of `+` before it
    and, where the product is `aten::matmul`, that composite's own time around the GEMM
    (`selection.bias_fold_spans`); the GEMM keeps its duration (its epilogue adds the bias
    as it writes the product)."""


@dataclass(frozen=True)
class RemoveScaler:
    """GradScaler gone (`bf16-autocast`): the host stretches of its unscale and inf check,
    the found_inf `.item()` sync after it and its scale update (the scaler's Python between
    them included) lose their host time, their launches' cost, their GPU work and their
    waits (`scaler.py`)."""


@dataclass(frozen=True)
class FuseOptimizer:
    """The optimizer's per-parameter or foreach ops replaced by one fused op per step
    (`torch.optim.AdamW(fused=True)`), inside the host rows whose name starts with
    `region_prefix` (`Optimizer.step#AdamW.step`): the ops' host time goes but for one op's
    (the median op there), launches there cost one launch for the first and nothing after,
    and each kernel keeps its time above the trace's shortest kernels' (`tiny_kernel_us`:
    the same bytes moved), the per-kernel floor paid once a step, back to back. The
    Python between the first op and the last (the unfused implementation's loop over the
    parameters) goes with them; the Python before the first op (gathering the parameters,
    which the fused path does too) stays."""

    region_prefix: str = OPTIMIZER_STEP_PREFIX


@dataclass(frozen=True)
class FuseChains:
    """Each chain of memory-bound kernels (events-table labels, in launch order) run as one
    fused kernel, as long as its longest kernel, launched once (`fuse_chain.py`)."""

    chains: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class OverlapBetweenCalls:
    """The host time of each step outside the decorated call (`call_region`: the caller's
    loop, a DataLoader's `__next__`) overlapped by loader workers: `remaining` of it is left
    (0: hidden entirely). Launches and syncs there keep their own cost. `keep_fetches`: the
    DataLoader fetches there are left to a `HideLoader` (so the two never hide one stretch
    twice)."""

    call_region: str
    remaining: float = 0.0
    keep_fetches: bool = False


@dataclass(frozen=True)
class HideLoader:
    """The host time inside every DataLoader fetch (`DataLoader.__next__` rows, inside the
    call or between calls) overlapped by loader workers: `remaining` of it is left.
    `workers`: how many worker processes do the fetching; a step then takes at least its
    measured fetch time over `workers` (they make batches no faster than that: the loader's
    throughput bounds the loop). None: no bound (the batches come for free)."""

    remaining: float = 0.0
    workers: int | None = None


@dataclass(frozen=True)
class NonBlockingCopies:
    """Host-device copies in `directions` made `non_blocking` from pinned memory: the host no
    longer waits for the copy, each copy call (already non-blocking or not) costs at most
    what a kernel launch costs in the same trace (the median `cudaLaunchKernel`-like call;
    `call_us` overrides), and the copy runs `speedup` times faster on the GPU (pinned
    memory needs no staging; 1.0 keeps its measured time; a huge one: the copy is gone).
    `op_syncs`: the sync a blocking copy's op makes after its copy call (PyTorch's
    `cudaStreamSynchronize` under `aten::copy_`) no longer waits either
    (`non_blocking.py`)."""

    directions: tuple[CopyDirection, ...] = ("HtoD",)
    call_us: float | None = None
    speedup: float = 1.0
    op_syncs: bool = True


@dataclass(frozen=True)
class FasterKernels:
    """GPU work made `factor` times faster: the items named `kernel` (a substring of the
    kernel's name), or every item launched under the op named `op`; both None: every kernel
    (memcpys and memsets excluded)."""

    factor: float
    kernel: str | None = None
    op: str | None = None


@dataclass(frozen=True)
class ScaleHost:
    """Every host cost (time between calls, each call's own cost) times `factor`: to undo the
    profiler's distortion, the untraced step time over the profiled host time. Launch
    latencies, GPU work and the wake-up after a sync are not host costs and stay.
    `region` (a host row's name, the decorated call): only the host time inside its spans
    (`inside`) or outside them (not `inside`: the caller's loop) is scaled."""

    factor: float
    region: str | None = None
    inside: bool = True


@dataclass(frozen=True)
class SyncEachStep:
    """Each step ends with the host waiting for every GPU item launched so far, then waking
    up after `wake_us` (None: the trace's median wake-up after a sync): how the recorder
    times an untraced call, a device sync at each end. Not a fix: a measure, so that the
    replay times what the untraced calls timed (the call with its GPU tail), not the
    pipelined step."""

    wake_us: float | None = None


Change = CudaGraph | RemoveSync | RemoveSelection | FoldBiasAdd | FuseOptimizer | \
    OverlapBetweenCalls | HideLoader | NonBlockingCopies | FasterKernels | ScaleHost | \
    SyncEachStep | RemoveScaler | RemoveSpans | FuseChains
