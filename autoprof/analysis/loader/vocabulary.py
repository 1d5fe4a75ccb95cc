"""The trace vocabulary: the Kineto categories, names and tolerances every stage reads.

One home for what a name or a category in a torch trace means, so the loader and the metrics
cannot disagree (a launch on a ROCm trace is a ``hip_runtime`` row, on a CUDA trace a
``cuda_runtime`` one; both count). Categories are compared in lower case by the loader and as
written by the metrics; every set here holds the names as Kineto writes them.
"""

from __future__ import annotations

import re

# --- categories -------------------------------------------------------------------------------

# Host calls into the GPU runtime or driver (CUDA and ROCm): the rows that launch, copy, sync.
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "hip_driver"})
# Work that occupies a GPU: kernels, copies and memsets.
GPU_WORK_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
# Rows on a GPU lane: its work plus the annotation spans the profiler mirrors there.
GPU_CATS = GPU_WORK_CATS | {"gpu_user_annotation"}
# Rows on the host lane.
CPU_CATS = frozenset(
    {"cpu_op", "user_annotation", "python_function", "cpu_instant_event", "trace", "overhead"}
) | RUNTIME_CATS
# Host rows that are not the profiled program's work: the profiler's own whole-trace span.
NOT_CPU_WORK_CATS = frozenset({"Trace"})

# --- names ------------------------------------------------------------------------------------

# The span torch.profiler opens around each step: ``ProfilerStep#<step number>``.
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
# Runtime / driver calls (in `RUNTIME_CATS`) that put work on a GPU queue.
LAUNCH_NAME = re.compile(r"launch|memcpy|memset", re.IGNORECASE)
# Host calls that wait for the GPU. The scalar reads wait only when a runtime call runs
# inside them (a CPU tensor's ``.item()`` has none): see `SCALAR_READS`.
SYNC_NAMES = frozenset({
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
    "hipMemcpy",
    "aten::item",
    "aten::_local_scalar_dense",
})
SCALAR_READS = frozenset({"aten::item", "aten::_local_scalar_dense"})
# autoprof's own work inside a trace is labelled ``autoprof::<what>``; it is never the user's.
AUTOPROF_LABEL = re.compile(r"^autoprof::")
# torch labels each batch fetch ``enumerate(DataLoader)#_<Kind>DataLoaderIter.__next__``.
DATA_LOADER_NAME = re.compile(r"DataLoader|_DataLoaderIter")
# A copy's direction in its GPU row's name (``Memcpy HtoD (Pageable -> Device)``, or the
# long form some Kineto versions write).
HOST_TO_DEVICE = re.compile(r"HtoD|Host -> Device")
DEVICE_TO_HOST = re.compile(r"DtoH|Device -> Host")

# --- tolerances -------------------------------------------------------------------------------

# Kineto rounds ``ts`` and ``dur`` to 1 ns each, so an end can pass its parent's by 2 ns.
EPS_US = 0.002
