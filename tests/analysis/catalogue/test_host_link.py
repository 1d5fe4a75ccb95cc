"""The host link (metrics/host_link.py) and what it gives a pageable copy made pinned: the
pinned rate read from the device's name, checked against the pinned copies of the committed
H200 recordings, and the pinned-memory fix on the H100 catalogue's pageable program held to
its stated band around the pinned step measured without the profiler."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import truth
from support.attrbuild import Trace
from support.store import committed

from autoprof.analysis.diagnose.code_fixes import code_fixes
from autoprof.analysis.diagnose.pageable import copy_speedup, pageable_rows
from autoprof.analysis.metrics.host_link import PCIE4_GBPS, PCIE5_GBPS, host_link, pinned_us
from autoprof.analysis.metrics.replay.baseline import host_baseline
from autoprof.analysis.metrics.replay.fixes import fix_changes
from autoprof.analysis.metrics.replay.loop import loop_split
from autoprof.analysis.metrics.replay.replay import replay_steps

DATA = Path(__file__).resolve().parents[2] / "data"
CATALOGUE = DATA / "gpu_h100_catalogue"
PAGEABLE = "Memcpy HtoD (Pageable -> Device)"
MIB_16 = 16 * 1024 * 1024
H100 = "NVIDIA H100 80GB HBM3"
PIN_BAND = 0.25  # the pin-memory entry's stated error band (docs/analysis.md's catalogue)


@pytest.mark.parametrize("device,gbps", [(H100, PCIE5_GBPS), ("NVIDIA H200", PCIE5_GBPS),
                                         ("NVIDIA A100-SXM4-80GB", PCIE4_GBPS),
                                         ("Some Future GPU", PCIE4_GBPS), (None, PCIE4_GBPS)])
def test_the_link_is_read_from_the_device_name(device: str | None, gbps: float) -> None:
    link = host_link(device)
    assert link.pinned_gbps == gbps
    assert pinned_us(MIB_16, link) == pytest.approx(MIB_16 / (gbps * 1e3))


def _pageable_step(copy_us: float, nbytes: float) -> Trace:
    """Three 300 us steps, each with a pageable copy of `nbytes` running `copy_us` on the GPU
    (its call holding the host throughout), then a kernel."""
    tr = Trace()
    for n in (1, 2, 3):
        t0 = 3000.0 * (n - 1)
        (tr.step(n, t0, 3000)
         .cpu("aten::to", t0 + 10, copy_us + 30)
         .cpu("aten::copy_", t0 + 11, copy_us + 28)
         .launch(t0 + 12, copy_us + 25, t0 + 30, copy_us, kernel=PAGEABLE,
                 gpu_cat="gpu_memcpy", api="cudaMemcpyAsync")
         .launch(t0 + copy_us + 60, 5, t0 + copy_us + 70, 200))
    return tr


def _with_bytes(tr: Trace, nbytes: float) -> pd.DataFrame:
    """`tr`'s events table, each pageable copy moving `nbytes`."""
    ev = tr.frame().copy(deep=True)
    ev["bytes"] = np.where(ev["name"] == PAGEABLE, nbytes, ev["bytes"].to_numpy(float))
    return ev


def test_a_slow_pageable_copy_is_promised_the_links_pinned_rate() -> None:
    ev = _with_bytes(_pageable_step(2500.0, MIB_16), MIB_16)
    copies, _ = pageable_rows(ev)
    own_gbps = MIB_16 / 2500.0 / 1e3
    assert copy_speedup(ev, copies, host_link(H100)) == pytest.approx(
        PCIE5_GBPS / own_gbps)
    # without a link only a faster copy of the trace itself counts: there is none
    assert copy_speedup(ev, copies) == 1.0
    pin = next(o for o in code_fixes(ev, None, (), 3000.0, device=H100)
               if o["cause"] == "pageable_copies")
    assert pin["fix"] == "pin-memory" and pin["evidence"]["link"] == "PCIe 5.0 x16"
    assert 1.03 < pin["predicted_speedup"] <= pin["max_speedup"] * 1.001


def test_a_copy_already_at_the_links_rate_is_promised_no_faster_copy() -> None:
    fast_us = pinned_us(MIB_16, host_link(H100))
    ev = _with_bytes(_pageable_step(fast_us, MIB_16), MIB_16)
    copies, _ = pageable_rows(ev)
    assert copy_speedup(ev, copies, host_link(H100)) == pytest.approx(1.0)


@pytest.mark.slow
def test_the_pcie5_figure_is_the_median_pinned_copy_of_the_h200_recordings() -> None:
    rates = []
    # the truth sets live under tests/data/ (tuned) and benchmarks/validation/data/ (held out)
    traces = [t for root in truth.ROOTS
              for t in root.glob("gpu_h200_truth*/runs/*_pin/*/*.pt.trace.json.gz")]
    for trace in sorted(traces, key=lambda t: t.relative_to(t.parents[4]).as_posix())[:6]:
        for e in json.load(gzip.open(trace))["traceEvents"]:
            nbytes = (e.get("args") or {}).get("bytes", 0)
            if str(e.get("name", "")).startswith("Memcpy HtoD (Pinned") and \
                    nbytes >= 1 << 20 and e.get("dur", 0) > 0:
                rates.append(nbytes / e["dur"] / 1e3)
    assert len(rates) >= 5
    assert statistics.median(rates) == pytest.approx(PCIE5_GBPS, rel=0.10)


@pytest.mark.slow
def test_pinning_is_ranked_first_on_the_h100_pageable_program_and_its_step_is_the_measured(
) -> None:
    """The catalogue's pageable program (a 16 MiB batch copied each step), recorded on an
    H100; pinned + non_blocking measured without the profiler in fresh processes. The fix's
    replayed step (GPU-bound once the host no longer waits at the copy op's sync) is held to
    the pinned program's measured step. Its gain (2.04x against 1.51x measured) is not: the
    program as written replays at the recording's untraced call (4.7 ms; its calls after
    the window 4.9-5.0 ms) where the truth's processes ran it in 3.4 ms."""
    case = json.loads((CATALOGUE / "catalogue_truth.json").read_text())["cases"]["pageable_copy"]
    run = committed.run(CATALOGUE / case["record"]["run"])
    top = run.analysis.opportunities[0]
    assert top["fix"] == "pin-memory"
    events, call = run.analysis.events, run.analysis.call_region
    assert call is not None
    baseline = host_baseline(events, call, loop_split(events, call), run.analysis.reference)
    copies, _ = pageable_rows(events)
    speedup = copy_speedup(events, copies, host_link(H100))
    pinned = replay_steps(events, [*baseline, *fix_changes("pin-memory", call,
                                                           copy_speedup=speedup)])
    pinned_ms = statistics.median(r.step_us for r in pinned) / 1e3
    assert pinned_ms == pytest.approx(case["fixed_ms_median"], rel=PIN_BAND)
