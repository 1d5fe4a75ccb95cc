"""Memory on runs recorded on an H200 (benchmarks/gpu/record_cases.py, mem_* cases), against
``torch.cuda.max_memory_allocated()`` of each call (peak stats reset before every call):
the peak agrees within 2% over the profiled calls, and the memory checks fire where they
should and nowhere else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoprof.analysis as analysis

ROOT = Path(__file__).resolve().parents[2] / "data" / "gpu_h200"
RECORDED = json.loads((ROOT / "recorded.json").read_text())["cases"]
CASES = ("mem_activations", "mem_leak", "mem_near_capacity")
TOLERANCE = 0.02
MEMORY_CHECKS = {"memory-growth", "near-capacity", "allocator-churn"}
EXPECTED = {"mem_activations": set(), "mem_leak": {"memory-growth"},
            "mem_near_capacity": {"near-capacity"}}


@pytest.fixture(scope="module", params=CASES)
def case(request: pytest.FixtureRequest) -> tuple[str, dict, analysis.Run]:
    recorded = RECORDED[request.param]
    return request.param, recorded, analysis.load(ROOT / recorded["run"])


def _cuda(run: analysis.Run) -> dict:
    memory = run.analysis.memory
    assert memory is not None
    [row] = memory.devices[memory.devices["device"] == "cuda:0"].to_dict(orient="records")
    return row


def test_recordings_are_there() -> None:
    assert all(RECORDED[c]["status"] == "complete" for c in CASES)


def test_peak_matches_max_memory_allocated(case) -> None:
    _, recorded, run = case
    truth = max(recorded["max_memory_allocated_per_call"][i] for i in recorded["profiled_calls"])
    peak = _cuda(run)["peak_allocated_bytes"]
    assert abs(peak - truth) <= TOLERANCE * truth, (peak, truth)


def test_memory_checks_fire_where_they_should(case) -> None:
    name, _, run = case
    fired = {d.id for d in run.diagnostics()} & MEMORY_CHECKS
    assert fired == EXPECTED[name]


def test_leak_grows_by_what_each_call_keeps() -> None:
    recorded = RECORDED["mem_leak"]
    run = analysis.load(ROOT / recorded["run"])
    steps = run.analysis.memory.steps
    cuda = steps[steps["device"] == "cuda:0"]
    assert cuda["growth_bytes"].tolist() == [recorded["info"]["leak_bytes_per_call"]] * 3
    [growth] = [d for d in run.diagnostics() if d.id == "memory-growth"]
    assert growth.evidence["device"] == "cuda:0"
    assert growth.evidence["top_site"]["region"] == "keep_history"


def test_near_capacity_reads_the_devices_memory() -> None:
    recorded = RECORDED["mem_near_capacity"]
    run = analysis.load(ROOT / recorded["run"])
    cuda = _cuda(run)
    assert cuda["capacity_bytes"] == recorded["info"]["capacity_bytes"]
    [near] = [d for d in run.diagnostics() if d.id == "near-capacity"]
    assert 90 <= near.evidence["reserved_pct"] < 97 and near.severity == "warning"


def test_activations_peak_in_backward_and_steps_are_flat() -> None:
    recorded = RECORDED["mem_activations"]
    run = analysis.load(ROOT / recorded["run"])
    memory = run.analysis.memory
    cuda = _cuda(run)
    regions = memory.by_region[memory.by_region["device"] == "cuda:0"].set_index("name")
    assert regions.loc["backward", "peak_bytes"] == cuda["peak_allocated_bytes"]
    layer = recorded["info"]["activation_bytes_per_layer"]
    assert regions.loc["forward", "allocated_bytes_per_step"] >= 8 * layer
    steps = memory.steps[memory.steps["device"] == "cuda:0"]
    assert (steps["growth_bytes"] == 0).all()


def test_summary_memory_key(case) -> None:
    _, recorded, run = case
    summary = run.summary()["memory"]
    cuda = [d for d in summary["devices"] if d["device"] == "cuda:0"][0]
    assert cuda["peak_allocated_bytes"] == _cuda(run)["peak_allocated_bytes"]
    assert cuda["capacity_bytes"] == 150109880320 and cuda["peak_step"] in (2, 3, 4)
    per_step = [r["allocated_bytes_per_step"] for r in summary["by_region"]]
    assert per_step == sorted(per_step, reverse=True)
