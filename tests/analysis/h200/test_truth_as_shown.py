"""What a user reads on the second and third held-out H200 sets, pinned
(docs/gpu-validation.md, "The judge"): every opportunity's predicted_speedup as the summary
writes it, against the fix applied by hand and timed without a profiler
(benchmarks/gpu/truth/as_shown.py). The third set was written after the summary's reference
and its one-line fixes were chosen."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu" / "truth"))

import as_shown  # noqa: E402
import evaluate  # noqa: E402

HELDOUT2 = ROOT / "tests" / "data" / "gpu_h200_truth_heldout2"
HELDOUT3 = ROOT / "tests" / "data" / "gpu_h200_truth_heldout3"

# (workload, measured fix): shown prediction, measured speedup
SHOWN = {
    ("mlp_loader_w2", "cuda_graph"): (1.94, 1.23),
    ("mlp_loader_w2", "workers4_pin_nonblocking"): (1.99, 2.56),
    ("cnn_loader_w0", "workers4_pin_nonblocking"): (3.72, 3.56),
    ("cnn_loader_w0", "cuda_graph"): (1.28, 1.18),
    ("sync_item_b1024", "graph_without_sync"): (6.02, 5.44),
    ("sync_mask_b1024", "graph_without_sync"): (4.47, 6.30),
    ("bert_train", "adamw_fused"): (1.42, 1.58),
    ("gpt2_mid", "cuda_graph"): (7.40, 7.60),
    ("gpt2_mid", "adamw_fused"): (1.05, 1.05),
    ("mlp_infer_b8", "cuda_graph"): (6.10, 5.34),
}
NOT_THE_BEST = {"bert_train"}
SHOWN3 = {
    ("seed_1024", "cuda_graph"): (2.19, 2.33),
    ("seed_1024", "addmm"): (1.12, 1.37),
    ("sync_nonzero_b1024", "graph_without_sync"): (6.03, 7.05),
    ("sync_nonzero_b1024", "adamw_fused"): (1.21, 1.51),
    ("mlp_infer_b64", "cuda_graph"): (6.70, 3.16),
}


def _shown_of(folder: Path) -> tuple[list[evaluate.Workload], list[str]]:
    data = json.loads((folder / "ground_truth.json").read_text())
    notes: list[str] = []
    workloads = [as_shown.shown_workload(folder, name, w, notes)
                 for name, w in data["workloads"].items()]
    return workloads, notes


def _assert_pairs(workloads: list[evaluate.Workload],
                  expected: dict[tuple[str, str], tuple[float, float]]) -> None:
    got = {(p.workload, p.fix): (p.predicted, p.measured) for w in workloads for p in w.pairs}
    assert set(got) == set(expected)
    for key, (predicted, measured) in expected.items():
        assert got[key][0] == pytest.approx(predicted, abs=0.01), key
        assert got[key][1] == pytest.approx(measured, abs=0.01), key


@pytest.fixture(scope="module")
def shown() -> tuple[list[evaluate.Workload], list[str]]:
    return _shown_of(HELDOUT2)


@pytest.mark.slow
def test_the_shown_predictions_and_their_errors_on_the_held_out_set(shown) -> None:
    workloads, notes = shown
    _assert_pairs(workloads, SHOWN)
    summary = evaluate.summarize(workloads)
    assert summary["pairs"] == 10 and summary["within_25_pct"] == 8
    assert summary["median_abs_error_pct"] == pytest.approx(10.3, abs=0.1)
    assert summary["max_abs_error_pct"] == pytest.approx(57.8, abs=0.1)
    assert {w.name for w in workloads if not w.top_is_best} == NOT_THE_BEST
    # no_loader (4.97x measured) is the bound of perfect overlap, not the best fix
    best = {w.name: w.best_measured for w in workloads}
    assert best["cnn_loader_w0"] == "workers4_pin_nonblocking"
    # shown fixes never measured by hand: bert's graph crashed on the GPU, and the sync
    # steps' AdamW was not timed fused
    assert notes == ["sync_item_b1024: shown `fused-optimizer` 1.07x: not tried on the GPU",
                     "sync_mask_b1024: shown `fused-optimizer` 1.07x: not tried on the GPU",
                     "bert_train: shown `cuda-graph` 5.18x: not tried on the GPU"]


def test_a_shown_graph_pairs_with_the_sync_free_graph_only_where_no_plain_one_was_timed() -> None:
    by_named = as_shown._measured_by_named(["cuda_graph", "graph_without_sync"])
    assert by_named["cuda-graph"] == ["cuda_graph"]
    assert as_shown._measured_by_named(["graph_without_sync"])["cuda-graph"] == [
        "graph_without_sync"]


@pytest.mark.slow
def test_the_model_on_the_held_out_set_with_its_profiler_free_baseline_known() -> None:
    """evaluate.py on the same set: the host scaled to the ground truth's own baseline."""
    folder = evaluate.evaluate_folder(HELDOUT2)
    got = evaluate.report([folder])["all"]
    assert (got["pairs"], got["within_25_pct"]) == (19, 16)
    assert (got["median_abs_error_pct"], got["max_abs_error_pct"]) == \
        pytest.approx((11.7, 40.7), abs=0.1)
    assert all(w.top_is_best for w in folder.workloads)


@pytest.mark.slow
def test_the_shown_predictions_on_the_third_held_out_set() -> None:
    workloads, notes = _shown_of(HELDOUT3)
    _assert_pairs(workloads, SHOWN3)
    summary = evaluate.summarize(workloads)
    assert summary["pairs"] == 5 and summary["within_25_pct"] == 4
    assert summary["median_abs_error_pct"] == pytest.approx(18.3, abs=0.1)
    # MLP inference at batch 64: the synchronised untraced call (0.408 ms at its fastest)
    # is 26% over the profiler-free iteration (0.324 ms), and the graph is over-predicted
    assert summary["max_abs_error_pct"] == pytest.approx(111.8, abs=0.2)
    assert all(w.top_is_best for w in workloads)
    assert notes == []
