"""Pinned, `non_blocking` copies replayed (metrics/replay/non_blocking.py): a blocking copy's
op syncs after its copy call, and the fix takes that wait away with the call's own; on
hand-built steps whose answer is known, and on H100 recordings against the gain measured
without a profiler."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.attrbuild import Trace
from support.store import committed

from autoprof.analysis.loader.vocabulary import HOST_TO_DEVICE
from autoprof.analysis.metrics.replay import NonBlockingCopies, build_graph, replay_step
from autoprof.analysis.metrics.replay.graph import Graph
from autoprof.analysis.metrics.replay.non_blocking import copy_syncs
from autoprof.analysis.metrics.replay.waits import LAUNCH

PAGEABLE = "Memcpy HtoD (Pageable -> Device)"
DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "validation" / "data"
PIN_BAND = 0.25  # the pin-memory entry's stated error band (docs/analysis.md's catalogue)


def blocking_copy(item: bool = False) -> Trace:
    """A 200 us kernel (12..212 on the GPU), then `x.to(device)` from pageable memory: the
    copy call returns at 30, its copy queued behind the kernel (212..232), and the op's
    `cudaStreamSynchronize` holds the host 32..235; 65 us later a last launch (its 10 us
    kernel after the copy), 95 us of host after it. `item`: an `.item()` after it, whose sync
    is no copy op's."""
    t = (Trace().step(1, 0, 400)
         .launch(5, 5, 12, 200)
         .cpu("aten::to", 20, 220).cpu("aten::copy_", 21, 218)
         .launch(22, 8, 212, 20, kernel=PAGEABLE, gpu_cat="gpu_memcpy", api="cudaMemcpyAsync")
         .cpu("cudaStreamSynchronize", 32, 203, "cuda_runtime")
         .launch(300, 5, 306, 10))
    return t.item(330, 30) if item else t


def _copy_ops(g: Graph) -> set[int]:
    names, op_row = g.names(), g.events["op_row"].to_numpy()
    return {int(op_row[g.item_row[i]]) for i in range(g.n_items)
            if HOST_TO_DEVICE.search(names[g.item_row[i]])}


def test_the_sync_a_blocking_copy_op_makes_is_found_and_no_other() -> None:
    g = build_graph(blocking_copy(item=True).frame())
    names = g.names()
    found = copy_syncs(g, _copy_ops(g))
    assert len(found) == 1
    (c,) = found.tolist()
    assert names[g.call_row[c]] == "cudaStreamSynchronize"
    assert names[g.row_parent[g.call_row[c]]] == "aten::copy_"
    # the .item()'s sync waits too, under no copy op: it is not the copy's
    syncs = np.flatnonzero(g.call_is_sync & (g.call_kind != LAUNCH)).tolist()
    assert len(syncs) == 2 and c in syncs
    assert copy_syncs(g, set()).size == 0


def test_pinned_copies_no_longer_wait_at_their_ops_sync() -> None:
    ev = blocking_copy().frame()
    assert replay_step(ev, 1, calibration="per_item").step_us == pytest.approx(400.0)
    # the copy call already cost about a launch: with the op's sync kept, the host still
    # waits there for the kernel and the copy, and the step keeps its time
    kept = replay_step(ev, 1, [NonBlockingCopies(op_syncs=False)], calibration="per_item")
    assert kept.step_us == pytest.approx(400.0, abs=1.0)
    # without that wait the host's 400 - 203 us end before the GPU's work does: the step is
    # the kernel, the copy and the last kernel from 12 us, each queued behind the one before
    got = replay_step(ev, 1, [NonBlockingCopies()], calibration="per_item")
    assert got.step_us == pytest.approx(12.0 + 200.0 + 20.0 + 10.0, abs=1.5)


def _case(folder: str, name: str) -> tuple[dict[str, object], float]:
    truth = json.loads((DATA / folder / "truth.json").read_text())["cases"][name]
    summary = committed.summary(DATA / folder / truth["record"]["run"])
    opp = next(o for o in summary["opportunities"] if o.get("fix") == "pin-memory")
    return opp, float(truth["fixes"]["pinned_non_blocking"]["speedup"])


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "name"), [
    ("gpu_h100_heldout", "pageable_uint8_images"),
    ("gpu_h100_heldout_catalogue", "kws_pageable_spectrograms"),
])
def test_pinned_copies_on_h100_recordings_within_the_entrys_band(folder: str,
                                                                  name: str) -> None:
    """Two programs whose batches were copied from pageable memory each step and then from
    a pinned buffer with non_blocking=True, timed without a profiler on one H100: the
    summary's pin-memory prediction within the entry's stated band of the measured gain."""
    opp, measured = _case(folder, name)
    predicted = float(opp["predicted_speedup"])  # type: ignore[arg-type]
    assert abs(predicted / measured - 1.0) <= PIN_BAND
