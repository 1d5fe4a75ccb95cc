"""repeat.py and drive.py's merge: how two profiler-free timings of the same fixes are paired
and how per-fix processes are merged. The floor they give on each set (fixes timed again in
fresh processes) is `results/repeat.json` (`python -m benchmarks.validation --tables
repeat`), not pinned here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu" / "truth"))

import repeat  # noqa: E402


def test_a_fix_timed_in_one_file_only_is_left_out(tmp_path: Path) -> None:
    import json

    def gt(speedups: dict[str, float]) -> dict[str, object]:
        return {"workloads": {"w": {"ground_truth": {"speedups": {
            k: {"iter": {"speedup": v}} for k, v in speedups.items()}}}}}

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(gt({"fix": 2.0, "other": 4.0})))
    b.write_text(json.dumps(gt({"fix": 2.2})))
    rows = repeat.agreements(a, b)
    assert [(r.fix, r.first, r.repeat) for r in rows] == [("fix", 2.0, 2.2)]
    assert rows[0].difference_pct == pytest.approx(-100 * 0.2 / 2.2)


def test_per_fix_processes_merge_each_fix_over_its_own_baseline() -> None:
    from drive import merge_pairs

    def result(base_ms: float, fix: str, fix_ms: float) -> dict[str, object]:
        stats = {"baseline": {"iter_ms": {"median": base_ms}},
                 fix: {"iter_ms": {"median": fix_ms}}}
        return {"workload": "w", "variants": {"baseline": {}, fix: {}}, "errors": {},
                "stats": stats, "speedups": {fix: {"iter": {"speedup": base_ms / fix_ms}}}}

    lost = {"workload": "w", "variants": {"baseline": {}}, "errors": {"graph": "CUDA error"},
            "stats": {"baseline": {"iter_ms": {"median": 9.0}}}, "speedups": {}}
    merged = merge_pairs({"a": result(4.0, "a", 2.0), "b": result(5.0, "b", 1.0),
                          "graph": lost, "c": None})
    assert merged is not None
    assert {f: s["iter"]["speedup"] for f, s in merged["speedups"].items()} == \
        {"a": 2.0, "b": 5.0}
    assert merged["stats"]["baseline"]["iter_ms"]["median"] == 4.0  # the first pair's
    assert merged["pair_baselines"]["b"]["iter_ms"]["median"] == 5.0
    assert merged["errors"] == {"graph": "CUDA error", "c": "its process ended without a result"}
    assert merge_pairs({"c": None}) is None
