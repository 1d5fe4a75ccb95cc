"""Pins, without a GPU, what `benchmarks/gpu/collect_cases.py` showed on an H200
(tests/data/gpu_h200/collect/): autoprof's own calls stay out of the measured steps, a thread
that owned the profiler and ended leaves a partial run and a clean exit, and
`torch.compile(autoprof(f))` compiles one graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoprof

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_h200" / "collect"
RESULTS = json.loads((DATA / "collect_cases.json").read_text())
SYNCS = ("cudaDeviceSynchronize", "cudaStreamSynchronize")


def _run(case: str) -> autoprof.Run:
    (folder,) = sorted((DATA / "runs" / case).iterdir())
    return autoprof.load(folder)


def _label_chain(events, row: int) -> list[str]:
    chain, parent = [], int(events.at[row, "parent"])
    while parent != -1:
        chain.append(str(events.at[parent, "name"]))
        parent = int(events.at[parent, "parent"])
    return chain


@pytest.mark.parametrize("case", ["seed", "seed_sync"])
def test_no_device_sync_of_autoprof_inside_the_profiled_call(case):
    """Syncs inside a step are the script's own (between its calls, right under the
    ProfilerStep span) or, with sync=True, under `autoprof::sync`; no other sits in the call."""
    run = _run(case)
    ev = run.events
    in_steps = ev[ev["name"].isin(SYNCS) & (ev["step"] >= 0)]
    assert len(in_steps) >= 3
    for row in in_steps.index:
        chain = _label_chain(ev, row)
        assert chain[-1].startswith("ProfilerStep#")
        if not chain[0].startswith("autoprof::"):  # sync=True's own sync is labelled
            assert len(chain) == 1, chain  # else it is the script's, between calls
    labelled = sum("autoprof::sync" in _label_chain(ev, r) for r in in_steps.index)
    assert labelled == (3 if case == "seed_sync" else 0)


@pytest.mark.parametrize("case", ["owner_thread_ends", "daemon_owner_at_exit"])
def test_a_thread_owned_profiler_ends_cleanly(case):
    assert RESULTS[case]["returncode"] == 0
    assert RESULTS[case]["status"] == "partial"


def test_compile_outside_the_decorator_is_one_graph():
    assert RESULTS["compile_outside"]["unique_graphs"] == 1
    assert RESULTS["compile_outside"]["status"] == "complete"
