"""Compute kernels that a replay makes overlap more than they did in the trace share the GPU
(processor sharing, metrics/replay/contention.py); times in microseconds."""

from __future__ import annotations

import numpy as np
import pytest
from support.attrbuild import Trace

from autoprof.analysis.metrics.replay import CudaGraph, replay_step
from autoprof.analysis.metrics.replay.contention import compute_items, lost_us


def launch_bound_two_streams() -> Trace:
    """A region `fwd` launching, 50 us apart, 40 us kernels alternately on streams 7 and 8:
    they never overlap in the trace."""
    t = Trace().step(1, 0, 210).region("fwd", 0, 205)
    for i in range(4):
        t.launch(50 * i, 5, 50 * i + 6, 40, kernel=f"gemm_{i}", stream=7 + i % 2)
    return t


def test_lost_time_under_processor_sharing() -> None:
    # two equal intervals at once: each loses half; a third one alone loses nothing
    got = lost_us(np.array([0.0, 0.0, 100.0]), np.array([10.0, 10.0, 110.0]))
    assert got.tolist() == pytest.approx([5.0, 5.0, 0.0])
    # three at once: each loses two thirds of the shared stretch
    assert lost_us(np.zeros(3), np.full(3, 9.0)).tolist() == pytest.approx([6.0] * 3)


def test_copies_and_collectives_do_not_contend() -> None:
    names = np.array(["gemm", "Memcpy HtoD", "ncclKernel_AllReduce", "memset"])
    cats = np.array(["kernel", "gpu_memcpy", "kernel", "gpu_memset"])
    assert compute_items(names, cats).tolist() == [True, False, False, False]


def test_two_streams_captured_together_share_the_gpu() -> None:
    """Captured as one graph the two streams' kernels run at once: without contention the
    GPU side would take 2 x 40 us plus the gaps; with the GPU shared, the four 40 us
    kernels still need 160 us of the GPU's time."""
    ev = launch_bound_two_streams().frame()
    assert replay_step(ev, 1).step_us == pytest.approx(210.0, abs=0.5)
    graph = replay_step(ev, 1, [CudaGraph("fwd")])
    assert graph.step_us == pytest.approx(160.0 + 2.5 + 1.0, abs=3.0)
    assert graph.gpu_busy_us == pytest.approx(160.0, abs=1.0)
