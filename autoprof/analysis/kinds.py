"""The names every layer shares, and the one colour each is painted in.

A step's time falls in one of eight buckets (metrics/breakdown.py), a run gets one of six
verdicts (metrics/verdict.py), the replay predicts a closed set of fixes
(metrics/replay/fixes.py) and ``check(..., try_fixes=...)`` measures another
(record/whatif/fixes/). The analysis, the text, markdown and notebook reports and the viewer
all read the names, their order and their colours from here, so a bucket looks the same on
every screen.

| kind | names | colours |
| --- | --- | --- |
| bucket | ``BUCKETS`` (analysis order), ``BUCKETS_SHOWN`` (report order) | ``BUCKET_COLOURS`` |
| verdict | ``VERDICT_KINDS`` | ``VERDICT_COLOURS``; ``VERDICT_TONE`` for a box |
| severity | ``SEVERITIES`` | ``SEVERITY_COLOURS`` |
| predicted fix | ``FIX_NAMES`` (replayed), ``CATALOGUE_FIX_NAMES`` (from the trace) | |
| measured fix | ``MEASURED_FIX_NAMES`` | ``WHATIF_STATUS_COLOURS`` (by a result's status) |

This module imports nothing of autoprof's: any layer may read it.
"""

from __future__ import annotations

from typing import Literal

Bucket = Literal["gpu_compute", "gpu_memory", "gpu_communication", "host_launch", "host_sync",
                 "host_cpu_work", "host_untraced", "host_communication"]
# host_communication last: GPU buckets are codes 0-2, host ones from host_launch's on
BUCKETS: tuple[Bucket, ...] = ("gpu_compute", "gpu_memory", "gpu_communication", "host_launch",
                               "host_sync", "host_cpu_work", "host_untraced",
                               "host_communication")
GPU_BUCKETS: tuple[Bucket, ...] = BUCKETS[:3]
HOST_BUCKETS: tuple[Bucket, ...] = BUCKETS[3:]
# the step's communication the GPU does not hide: NCCL alone on the GPU, gloo on the host
COMMUNICATION_BUCKETS: tuple[Bucket, ...] = ("gpu_communication", "host_communication")
# the order reports list them in: the GPU's, all communication, then the host's
BUCKETS_SHOWN: tuple[Bucket, ...] = ("gpu_compute", "gpu_memory", "gpu_communication",
                                     "host_communication", "host_launch", "host_sync",
                                     "host_cpu_work", "host_untraced")
# GPU side greens/blues, communication purples, host side warm
BUCKET_COLOURS: dict[str, str] = {
    "gpu_compute": "#2ca02c", "gpu_memory": "#17becf", "gpu_communication": "#9467bd",
    "host_launch": "#ff7f0e", "host_sync": "#d62728", "host_cpu_work": "#8c564b",
    "host_untraced": "#bcbd22", "host_communication": "#c5b0d5",
}
# the text report's one-character bar (monospace, no colour)
BUCKET_MARKS: dict[Bucket, str] = {
    "gpu_compute": "#", "gpu_memory": "=", "gpu_communication": "~", "host_launch": "L",
    "host_sync": "S", "host_cpu_work": "C", "host_untraced": ".", "host_communication": "w",
}

VerdictKind = Literal["overhead-bound", "compute-bound", "communication-bound", "mixed",
                      "cpu-only", "input-bound"]
VERDICT_KINDS: tuple[VerdictKind, ...] = ("overhead-bound", "compute-bound",
                                          "communication-bound", "mixed", "cpu-only",
                                          "input-bound")
NEUTRAL_COLOUR = "#616161"
# a verdict is painted as the bucket that decides it
VERDICT_COLOURS: dict[str, str] = {
    "compute-bound": BUCKET_COLOURS["gpu_compute"],
    "overhead-bound": BUCKET_COLOURS["host_launch"],
    "communication-bound": BUCKET_COLOURS["gpu_communication"],
    "input-bound": "#fbc02d", "mixed": "#1565c0", "cpu-only": NEUTRAL_COLOUR,
}
Tone = Literal["success", "warning", "info"]
# the box a screen shows the verdict in: a warning where the step is not the GPU's
VERDICT_TONE: dict[VerdictKind, Tone] = {
    "overhead-bound": "warning", "input-bound": "warning", "compute-bound": "success",
    "communication-bound": "info", "mixed": "info", "cpu-only": "info",
}

Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = ("critical", "warning", "info")
SEVERITY_COLOURS: dict[str, str] = {"critical": "#c62828", "warning": "#ef6c00",
                                         "info": "#1565c0"}

FixName = Literal["cuda-graph", "remove-sync", "remove-line", "sync-free-cuda-graph",
                  "loader-workers", "pin-memory", "no-loader", "fused-optimizer", "addmm",
                  "bf16-autocast"]
FIX_NAMES: tuple[FixName, ...] = ("cuda-graph", "remove-sync", "remove-line",
                                  "sync-free-cuda-graph", "loader-workers", "pin-memory",
                                  "no-loader", "fused-optimizer", "addmm", "bf16-autocast")
# the fixes the catalogue predicts from the trace and the manifest, without the replay
# (diagnose/: op_loop.py, tf32.py, inference_mode.py, threads.py, recompiles.py,
# batched_loader.py; deleting.py; fuse_elementwise.py)
CatalogueFixName = Literal["vectorise", "tf32", "inference-mode", "set-num-threads",
                           "compile-dynamic", "batched-dataset", "channels-last",
                           "zero-grad-none", "tensor-on-device", "ddp-no-sync",
                           "fuse-elementwise"]
CATALOGUE_FIX_NAMES: tuple[CatalogueFixName, ...] = ("vectorise", "tf32", "inference-mode",
                                                     "set-num-threads", "compile-dynamic",
                                                     "batched-dataset", "channels-last",
                                                     "zero-grad-none", "tensor-on-device",
                                                     "ddp-no-sync", "fuse-elementwise")
MeasuredFixName = Literal["compile", "compile-reduce-overhead", "cuda-graph", "inference-mode",
                          "bf16", "channels-last"]
# in the order check(..., try_fixes=...) tries them
MEASURED_FIX_NAMES: tuple[MeasuredFixName, ...] = ("compile", "compile-reduce-overhead",
                                                   "cuda-graph", "inference-mode", "bf16",
                                                   "channels-last")
WHATIF_STATUS_COLOURS: dict[str, str] = {
    "faster": "#54a24b", "cannot tell": "#9ecae9", "no change": "#9ecae9", "slower": "#e45756",
    "outputs differ": "#eeca3b", "depends on inputs": "#b279a2",
}
OTHER_STATUS_COLOUR = "#bab0ac"
