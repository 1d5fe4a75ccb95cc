"""Contention between compute kernels that a replay makes overlap more than the trace did.

A kernel's measured duration holds the contention it met in the trace. When a change makes
kernels of several streams run at once where they did not (two chains captured in one CUDA
graph, whose launches no longer space them out), they share the GPU's SMs: the model is
processor sharing, each of the N compute kernels running at an instant progressing at 1/N of
its own pace. Over a kernel's interval it so loses the integral of (N - 1) / N; the replay
adds to its duration what it loses there beyond what it lost in the trace (its measured
overlap), and replays again until the durations settle (`simulate.simulate`).

Copies (memcpy, memset) run on copy engines and NCCL kernels mostly wait on the network:
neither is counted. On the H200 two chains of four 1024x1024 bf16 matmuls on two streams did
not overlap in the trace (60.4 us of kernels per step, 60.4 us busy); captured in one graph
they took 65.1 us an iteration against 68.7 us on one stream: the GPU's throughput, not the
streams, bounds them, as processor sharing says.
"""

from __future__ import annotations

import re

import numpy as np

NOT_COMPUTE = re.compile(r"nccl|memcpy|memset", re.IGNORECASE)
ITERATIONS = 12  # the stretch converges geometrically (half the gap each round for two)
SETTLED_US = 0.05  # stop when no duration moves by more than this


def compute_items(names: np.ndarray, cats: np.ndarray) -> np.ndarray:
    """Which GPU items contend for the SMs: kernels other than copies and collectives (each
    distinct name matched once)."""
    excluded: dict[str, bool] = {}  # by name (not a sort of fixed-width copies of them)
    for name in set(map(str, names.tolist())):
        excluded[name] = bool(NOT_COMPUTE.search(name))
    hit = np.fromiter((excluded[str(n)] for n in names.tolist()), bool, len(names))
    return np.asarray((cats == "kernel") & ~hit, dtype=bool)


def lost_us(start_us: np.ndarray, end_us: np.ndarray) -> np.ndarray:
    """Per interval, the time lost to the others under processor sharing: the integral of
    (N - 1) / N over it, N the number of intervals running at each instant."""
    n = len(start_us)
    if n < 2:
        return np.zeros(n)
    edges = np.unique(np.r_[start_us, end_us])
    if len(edges) < 2:
        return np.zeros(n)
    # how many intervals cover each elementary segment [edges[k], edges[k+1])
    delta = np.zeros(len(edges))
    np.add.at(delta, np.searchsorted(edges, start_us), 1)
    np.add.at(delta, np.searchsorted(edges, end_us), -1)
    count = np.cumsum(delta)[:-1]
    width = np.diff(edges)
    share = np.where(count > 1, (count - 1) / np.maximum(count, 1), 0.0)
    cumulative = np.r_[0.0, np.cumsum(share * width)]
    lost = cumulative[np.searchsorted(edges, end_us)] - cumulative[np.searchsorted(edges,
                                                                                  start_us)]
    return np.asarray(np.maximum(lost, 0.0), dtype=float)


def overlaps(streams: np.ndarray) -> bool:
    """Whether contention can change anything: compute work on two streams or more."""
    return len(np.unique(streams)) > 1
