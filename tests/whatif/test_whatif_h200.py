"""The what-if's conclusions on an H200, pinned from benchmarks/gpu/whatif_cases.py's recording
(copied as ``tests/data/gpu_h200/whatif/``: ``whatif_cases.json`` and ``runs/``). Skipped
until that recording is in the tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoprof.analysis.loader.whatif import best_fix, whatif_or_warn

ROOT = Path(__file__).resolve().parents[1] / "data" / "gpu_h200" / "whatif"
RECORDED = ROOT / "whatif_cases.json"
pytestmark = pytest.mark.skipif(not RECORDED.is_file(),
                                reason=f"no H200 what-if recording at {RECORDED}")
SEVERAL = 2.0  # "several times faster"
FEW_PCT = 1.15  # "no more than a few percent" (a folded bias add may save ~10% at 4096)


def _case(name: str) -> tuple[dict, dict[str, dict]]:
    case = json.loads(RECORDED.read_text())["cases"][name]
    results = whatif_or_warn(ROOT / case["run"])  # as the summary reads them
    return case, {r["fix"]: r for r in results}


def test_small_seed_graphs_are_several_times_faster_and_no_longer_overhead_bound():
    case, fixes = _case("seed64x100")
    for name in ("cuda-graph", "compile-reduce-overhead"):
        r = fixes[name]
        assert r["status"] == "faster" and r["outputs_match"] is True, r
        assert r["speedup_low"] >= SEVERAL, r
    hand = case["truth"]["hand_cuda_graph_speedup"]
    assert fixes["cuda-graph"]["speedup"] == pytest.approx(hand, rel=0.3)
    best = best_fix(list(fixes.values()))
    assert best is not None and best["fix"] in ("cuda-graph", "compile-reduce-overhead")
    assert best["fixed_verdict"] not in (None, "overhead-bound"), best


def test_large_seed_no_fix_claims_more_than_a_few_percent():
    _, fixes = _case("seed4096")
    measured = [r for r in fixes.values() if r.get("fixed_us") is not None]
    assert measured
    for r in measured:
        assert r["measured_speedup"] < FEW_PCT, r
    assert fixes["bf16"]["applicable"] is False  # the seed is bf16 already


def test_training_step_with_item_cannot_be_captured_and_says_where():
    _, fixes = _case("train_item")
    graph = fixes["cuda-graph"]
    assert graph["applicable"] is False
    assert graph["reason"].startswith("function synchronises with the host")
    assert "loss.item()" in graph["reason"]
    assert fixes["inference-mode"]["applicable"] is False
