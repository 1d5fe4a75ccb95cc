"""evaluate.py, the replay with the profiler-free baseline known: what it pairs, and what it
leaves out with a note. Its table over every truth set is `results/evaluated.json`
(`python -m benchmarks.validation --tables evaluated`), not pinned here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.truth import truth_dir
from support.truth_pairs import held_to_the_goal

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
TRUTHS = (DATA / "gpu_h200_truth",)


def _evaluate_module() -> ModuleType:
    path = ROOT / "benchmarks" / "gpu" / "truth" / "evaluate.py"
    spec = importlib.util.spec_from_file_location("truth_evaluate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["truth_evaluate"] = module
    spec.loader.exec_module(module)
    return module


evaluate = _evaluate_module()


def test_the_evaluation_skips_what_it_does_not_know_with_a_note(tmp_path: Path) -> None:
    real = evaluate.json.loads((TRUTHS[0] / "ground_truth.json").read_text())
    item = real["workloads"]["sync_item"]
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "item").symlink_to(TRUTHS[0] / item["record"]["run"])
    gt = item["ground_truth"]
    data = {"workloads": {
        "known": {"record": {"run": "runs/item"}, "ground_truth": {
            "stats": gt["stats"], "errors": {"cuda_graph": "illegal memory access"},
            "speedups": {"remove": gt["speedups"]["remove"],
                         "mystery": gt["speedups"]["remove"], "broken": {"iter": None}}}},
        "no_run": {"record": {"run": "runs/gone"}, "ground_truth": {
            "stats": gt["stats"], "speedups": {"remove": gt["speedups"]["remove"]}}},
        "nothing": {"record": {}, "ground_truth": {}}}}
    (tmp_path / "ground_truth.json").write_text(evaluate.json.dumps(data))
    folder = evaluate.evaluate_folder(tmp_path)
    assert [(p.workload, p.fix, p.named) for p in folder.pairs] == [
        ("known", "remove", "remove-line")]
    alone = evaluate.evaluate_workload(TRUTHS[0], "sync_item", item, [])
    assert folder.pairs[0].predicted == pytest.approx(
        next(p.predicted for p in alone.pairs if p.fix == "remove"))
    assert folder.notes == ["known: `cuda_graph` failed on the GPU (no measurement)",
                            "known: `mystery` has no replayed fix",
                            "no_run: no run folder ('runs/gone')", "nothing: no fix measured"]
    out = tmp_path / "out.json"
    assert evaluate.main([str(tmp_path), "--json", str(out)]) == 0
    assert evaluate.json.loads(out.read_text())["summary"]["all"]["pairs"] == 1


@pytest.mark.slow
def test_the_replay_with_the_baseline_known_is_within_the_goal_too() -> None:
    """On a set where the goal is met as shown, the replay with the set's profiler-free
    baseline known meets it too."""
    folder = evaluate.evaluate_folder(truth_dir("gpu_h200_truth_same_process3"))
    held_to_the_goal(folder.workloads)
