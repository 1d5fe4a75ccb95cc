"""allocator-churn on GPU runs recorded by benchmarks/gpu/record_memory_churn.py, against the
allocator's own counts (torch.cuda.memory_stats around every call). Runs once those runs and
their recorded_memory.json are under tests/data/gpu_h200/ (the runs/ prefix dropped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autoprof.analysis as analysis

ROOT = Path(__file__).resolve().parents[2] / "data" / "gpu_h200"
RECORDED = ROOT / "recorded_memory.json"
pytestmark = pytest.mark.skipif(not RECORDED.is_file(),
                                reason="record_memory_churn.py has not been run on a GPU yet")
TOLERANCE = 0.02
CHURN_FIRES = {"mem_churn": True, "mem_fragmented": True, "mem_compact": False}


def _case(name: str) -> tuple[dict, analysis.Run]:
    case = json.loads(RECORDED.read_text())["cases"][name]
    run = Path(case["run"])
    run = run.relative_to("runs") if run.parts[0] == "runs" else run
    return case, analysis.load(ROOT / run)


def _profiled(case: dict, key: str) -> list[int]:
    return [case["calls"][i][key] for i in case["profiled_calls"]]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHURN_FIRES))
def test_churn_fires_where_it_should(name: str) -> None:
    _, run = _case(name)
    fired = {d.id for d in run.diagnostics()}
    assert ("allocator-churn" in fired) == CHURN_FIRES[name]
    assert not fired & {"memory-growth", "near-capacity"}


def test_allocations_per_step_are_the_allocators() -> None:
    case, run = _case("mem_churn")
    steps = run.analysis.memory.steps
    cuda = steps[steps["device"] == "cuda:0"].sort_values("step")
    assert cuda["allocations"].tolist() == _profiled(case, "allocations")


@pytest.mark.parametrize("name", ["mem_fragmented", "mem_compact"])
def test_peaks_match_memory_stats(name: str) -> None:
    case, run = _case(name)
    devices = run.analysis.memory.devices
    [cuda] = devices[devices["device"] == "cuda:0"].to_dict(orient="records")
    allocated = max(_profiled(case, "max_memory_allocated"))
    reserved = max(_profiled(case, "memory_reserved"))
    assert abs(cuda["peak_allocated_bytes"] - allocated) <= TOLERANCE * allocated
    assert abs(cuda["peak_reserved_bytes"] - reserved) <= TOLERANCE * reserved


@pytest.mark.slow
def test_churn_message_names_the_gpu_and_keeps_its_units() -> None:
    """The CPU and cuda:0 both make 6,000 allocations a step in mem_churn: the GPU is named;
    sizes keep their unit spelling (GiB, MiB)."""
    for name, expected in (("mem_churn", "cuda:0 makes 6000 allocations per step"),
                           ("mem_fragmented", "cuda:0 reserves 8.11 GiB for a peak of 300 MiB")):
        _, run = _case(name)
        (churn,) = [d for d in run.diagnostics() if d.id == "allocator-churn"]
        assert expected in churn.message
