"""Replayed fixes against the same fixes applied by hand and timed without the profiler.

Every fix of the H200 truth recordings (`tests/data/gpu_h200_truth*/ground_truth.json`) that
maps onto a named replay fix is replayed on the workload's run folder by
`benchmarks/gpu/truth/evaluate.py` (the host costs first scaled to the untraced baseline
iteration), and its predicted speedup (median, min and max over the profiled steps) is pinned
here, by (workload, fix). docs/gpu-validation.md holds the same table beside the
measurements. The goal (median |error| <= 10%, none over 25%) is not met; the tests pin where
the replay stands, per set: the workloads looked at while the model was changed (`TUNED`)
and those only evaluated.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
# the first recording, and four workloads recorded after the model was written
TRUTHS = (DATA / "gpu_h200_truth", DATA / "gpu_h200_truth_heldout")


def _evaluate_module() -> ModuleType:
    path = ROOT / "benchmarks" / "gpu" / "truth" / "evaluate.py"
    spec = importlib.util.spec_from_file_location("truth_evaluate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["truth_evaluate"] = module
    spec.loader.exec_module(module)
    return module


evaluate = _evaluate_module()


@cache
def folders() -> tuple[Any, ...]:
    return tuple(evaluate.evaluate_folder(root) for root in TRUTHS)


def workloads() -> list[Any]:
    return [w for f in folders() for w in f.workloads]


def pairs() -> dict[tuple[str, str], Any]:
    return {(p.workload, p.fix): p for w in workloads() for p in w.pairs}


# (workload, fix, predicted median, min, max over steps)
PINNED = [
    ("mlp_loader_w0", "workers4_pin_nonblocking", 5.49, 5.36, 5.55),
    ("mlp_loader_w0", "pin_nonblocking", 1.00, 1.00, 1.01),
    ("mlp_loader_w0", "no_loader", 9.30, 8.50, 11.35),
    ("mlp_loader_w0", "cuda_graph", 1.10, 1.10, 1.12),
    ("gpt2_tiny", "adamw_fused", 1.08, 1.07, 1.09),
    ("gpt2_large", "adamw_fused", 1.00, 1.00, 1.00),
    ("gpt2_large", "cuda_graph", 1.03, 1.02, 1.04),
    ("sync_mask", "remove", 1.22, 1.17, 1.30),
    ("sync_mask", "where", 1.00, 1.00, 1.00),
    ("sync_mask", "graph_without_sync", 3.07, 2.98, 3.24),
    ("seed_64", "addmm", 1.29, 1.27, 1.32),
    ("seed_64", "cuda_graph", 1.96, 1.68, 2.18),
    ("seed_4096", "addmm", 1.25, 1.18, 1.25),
    ("seed_4096", "cuda_graph", 1.02, 1.02, 1.34),
    ("mlp_loader_w4_pin", "workers8_pin_nonblocking", 1.06, 1.06, 1.13),
    ("mlp_loader_w4_pin", "no_loader", 1.07, 1.06, 1.14),
    ("mlp_loader_w4_pin", "cuda_graph", 4.65, 3.24, 5.18),
    ("cnn_loader_w0_pin", "workers4_pin_nonblocking", 4.89, 4.26, 4.94),
    ("cnn_loader_w0_pin", "no_loader", 5.56, 4.28, 5.78),
    ("cnn_loader_w0_pin", "cuda_graph", 1.21, 1.06, 1.22),
    ("cnn_loader_w4", "workers8_pin_nonblocking", 1.17, 1.16, 1.49),
    ("cnn_loader_w4", "pin_nonblocking", 1.03, 1.02, 1.03),
    ("cnn_loader_w4", "no_loader", 1.29, 1.26, 1.63),
    ("cnn_loader_w4", "cuda_graph", 2.05, 1.73, 2.54),
    ("mlp_loader_inside", "workers4_pin_nonblocking", 5.06, 4.60, 5.09),
    ("mlp_loader_inside", "no_loader", 5.13, 4.62, 5.20),
    ("mlp_loader_inside", "cuda_graph", 1.25, 1.24, 1.25),
    ("compiled_mlp", "adamw_fused", 1.57, 1.42, 1.57),
    ("compiled_mlp", "cuda_graph", 9.91, 9.14, 10.18),
    ("sync_item", "remove", 1.01, 1.00, 1.01),
    ("sync_item", "keep_on_gpu", 1.01, 1.00, 1.01),
    ("sync_item", "pinned_async", 1.01, 1.00, 1.01),
    ("sync_item", "graph_without_sync", 2.17, 1.70, 2.28),
    ("sync_nonzero", "remove", 1.35, 1.34, 1.42),
    ("sync_nonzero", "mask_weights", 1.00, 1.00, 1.00),
    ("sync_nonzero", "graph_without_sync", 2.86, 2.84, 3.54),
    ("sync_cpu", "remove", 1.01, 1.01, 1.01),
    ("sync_cpu", "pinned_async", 1.01, 1.01, 1.01),
    ("sync_cpu", "graph_without_sync", 2.10, 2.06, 2.11),
    ("sync_print", "remove", 1.04, 1.03, 1.04),
    ("sync_print", "pinned_async", 1.01, 1.01, 1.01),
    ("sync_print", "graph_without_sync", 2.54, 2.53, 2.71),
    ("two_streams", "cuda_graph", 3.60, 2.95, 3.65),
    ("infer_b1", "cuda_graph", 4.71, 3.54, 5.73),
    ("infer_large", "cuda_graph", 1.01, 1.00, 1.01),
]
# (set, pairs, median |error| %, largest |error| %, pairs within 25%)
SUMMARIES = [
    ("tuned", 25, 8.2, 39.8, 23),
    ("held out", 20, 13.2, 66.0, 14),
    ("all", 45, 9.3, 66.0, 37),
]
TOP_MISSES = {
    "gpt2_tiny": "compile_reduce_overhead",
    "gpt2_large": "adamw_fused",
    "seed_4096": "compile",
    "graph_program": "compile_in_graph",
    "infer_large": "channels_last_bf16",
}


@pytest.mark.slow
@pytest.mark.parametrize(("workload", "fix", "median", "low", "high"), PINNED,
                         ids=[f"{w}-{f}" for w, f, *_ in PINNED])
def test_each_replayed_fix_is_pinned(workload: str, fix: str, median: float, low: float,
                                     high: float) -> None:
    got = pairs()[(workload, fix)]
    assert (got.predicted, got.predicted_min, got.predicted_max) == \
        pytest.approx((median, low, high), abs=0.011)


def test_every_modelled_fix_is_pinned() -> None:
    assert {(w, f) for w, f, *_ in PINNED} == set(pairs())


@pytest.mark.parametrize(("group", "n", "median_pct", "max_pct", "within"), SUMMARIES)
def test_the_errors_against_the_fixes_timed_by_hand(group: str, n: int, median_pct: float,
                                                    max_pct: float, within: int) -> None:
    got = evaluate.report(folders())[group]
    assert (got["pairs"], got["within_25_pct"]) == (n, within)
    assert (got["median_abs_error_pct"], got["max_abs_error_pct"]) == \
        pytest.approx((median_pct, max_pct), abs=0.1)


def test_the_top_prediction_is_the_best_fix_tried() -> None:
    """TOP_MISSES: the workloads whose best fix measured is not the one predicted to gain
    most, with what was best."""
    misses = {w.name: w.best_measured for w in workloads() if not w.top_is_best}
    assert misses == TOP_MISSES


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
    assert folder.pairs[0].predicted == pytest.approx(pairs()[("sync_item", "remove")].predicted)
    assert folder.notes == ["known: `cuda_graph` failed on the GPU (no measurement)",
                            "known: `mystery` has no replayed fix",
                            "no_run: no run folder ('runs/gone')", "nothing: no fix measured"]
    out = tmp_path / "out.json"
    assert evaluate.main([str(tmp_path), "--json", str(out)]) == 0
    assert evaluate.json.loads(out.read_text())["summary"]["all"]["pairs"] == 1
