"""Pageable host-to-device copies (diagnose/pageable.py): found from the copies themselves,
sized as the host time held in their calls, offered as pinned memory with non_blocking
copies and replayed, on hand-built steps whose answer is known and on H200 recordings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.attrbuild import Trace
from support.store import committed

from autoprof.analysis.diagnose.code_fixes import code_fixes
from autoprof.analysis.diagnose.pageable import pageable_copies, pageable_rows
from autoprof.analysis.diagnose.predictions import one_per_fix

DATA = Path(__file__).resolve().parents[2] / "data"
PAGEABLE = "Memcpy HtoD (Pageable -> Device)"


def _step(tr: Trace, n: int, t0: float, copy_name: str = PAGEABLE) -> Trace:
    """One step of 300 us: `aten::to` holds the host 145 us in a pageable copy's call (the
    copy runs 20 us on the GPU at its end), then two 50 us kernels."""
    return (tr.step(n, t0, 300)
            .cpu("aten::to", t0 + 10, 150)
            .cpu("aten::copy_", t0 + 11, 148)
            .launch(t0 + 12, 145, t0 + 136, 20, kernel=copy_name, gpu_cat="gpu_memcpy",
                    api="cudaMemcpyAsync")
            .launch(t0 + 170, 5, t0 + 176, 50)
            .launch(t0 + 200, 5, t0 + 230, 50))


def _trace(copy_name: str = PAGEABLE) -> Trace:
    out = Trace()
    for n in (1, 2, 3):
        _step(out, n, 300 * (n - 1), copy_name)
    return out


def test_pageable_copies_are_found_and_sized_as_the_host_time_in_their_calls() -> None:
    ev = _trace().frame()
    copies, calls = pageable_rows(ev)
    assert len(copies) == len(calls) == 3
    got = pageable_copies(ev, 3, 300.0)
    assert got is not None
    opp, speedup = got
    assert opp["cause"] == "pageable_copies"
    assert opp["us_per_step"] == pytest.approx(145.0)
    assert opp["where"][0]["name"] == "aten::to"  # the op the user's line called
    assert opp["max_speedup"] == pytest.approx(300.0 / 155.0)
    assert "pin_memory()" in opp["hint"] and "non_blocking=True" in opp["hint"]
    assert speedup == 1.0  # no faster copy in the trace: the GPU copy keeps its time


def test_pinned_copies_are_not_pageable() -> None:
    ev = _trace("Memcpy HtoD (Pinned -> Device)").frame()
    assert pageable_copies(ev, 3, 300.0) is None


def test_the_fix_is_replayed_and_gains_what_the_host_no_longer_holds() -> None:
    ev = _trace().frame()
    opps = code_fixes(ev, None, (), 300.0)
    pin = next(o for o in opps if o["cause"] == "pageable_copies")
    assert pin["fix"] == "pin-memory"
    # the host no longer waits 145 us in the copy's call: the step gains, and no more than
    # the bound of removing that time entirely
    assert 1.03 < pin["predicted_speedup"] <= pin["max_speedup"] * 1.001


def test_one_fix_is_offered_once() -> None:
    a = {"cause": "gpu_memory", "fix": "pin-memory", "predicted_speedup": 1.1, "hint": "h"}
    b = {"cause": "pageable_copies", "fix": "pin-memory", "predicted_speedup": 1.4, "hint": "h"}
    out = one_per_fix([a, b])
    assert out[0]["fix"] is None and "pageable_copies" in out[0]["hint"]
    assert out[1] is b


@pytest.mark.parametrize("order", ["bucket first", "copies first"])
def test_on_a_tie_the_copies_own_entry_keeps_the_fix_over_the_bucket(order: str) -> None:
    bucket = {"cause": "gpu_memory", "fix": "pin-memory", "predicted_speedup": 1.2, "hint": "h"}
    copies = {"cause": "pageable_copies", "fix": "pin-memory", "predicted_speedup": 1.2,
              "hint": "h"}
    opps = [bucket, copies] if order == "bucket first" else [copies, bucket]
    out = {o["cause"]: o for o in one_per_fix(opps)}
    assert out["pageable_copies"] is copies
    assert out["gpu_memory"]["fix"] is None and "pageable_copies" in out["gpu_memory"]["hint"]


@pytest.mark.slow
def test_a_loader_bound_step_is_not_offered_pinning_for_its_small_copies() -> None:
    """mlp_loader_w0 on the H200: its pageable copies hold the host 1-2% of a step that the
    DataLoader fills; replayed, pinning gains under 3%: not offered (a rerun is noisier)."""
    truth = json.loads((DATA / "gpu_h200_truth" / "ground_truth.json").read_text())
    run = committed.run(DATA / "gpu_h200_truth" / truth["workloads"]["mlp_loader_w0"]["record"]
                        ["run"])
    events = run.analysis.events
    found = pageable_copies(events, 3, float(run.analysis.breakdown.steps["step_us"].mean()))
    assert found is not None and found[0]["pct_of_step"] < 3.0
    assert "pageable_copies" not in [o["cause"] for o in run.analysis.opportunities]
