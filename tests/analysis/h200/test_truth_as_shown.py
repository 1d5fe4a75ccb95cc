"""What a user reads on the held-out H200 sets, pinned (docs/gpu-validation.md, "The
judge"): every opportunity's predicted_speedup as the summary writes it, against the fix
applied by hand and timed without a profiler (benchmarks/gpu/truth/as_shown.py), and the
model with each set's profiler-free baseline known (evaluate.py). The sets' READMEs say when
each was written and what was chosen after reading it."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu" / "truth"))

import as_shown  # noqa: E402
import evaluate  # noqa: E402
from support.store import committed

DATA = ROOT / "tests" / "data"


@dataclass(frozen=True)
class Pinned:
    """One set: (workload, measured fix) -> (shown prediction, measured speedup); the summary
    as shown (pairs, within 25%, median and largest |error| in %); the workloads whose top
    pick is not the best fix measured; the notes; the same for evaluate.py."""

    folder: str
    shown: dict[tuple[str, str], tuple[float, float]]
    summary: tuple[int, int, float, float]
    not_the_best: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    evaluated: tuple[int, int, float, float] = (0, 0, 0.0, 0.0)
    evaluated_not_the_best: set[str] = field(default_factory=set)


SETS = [
    # an fp32 MLP's inference at a batch of 2048 or more spends most of its GPU time in CUDA-core
    # fp32 GEMMs and is offered tf32 first (diagnose/tf32.py), a fix these sets never timed:
    # its top pick is not among the measured fixes (not_the_best)
    Pinned("gpu_h200_truth_heldout2", {
        ("mlp_loader_w2", "workers4_pin_nonblocking"): (2.64, 1.81),
        ("cnn_loader_w0", "workers4_pin_nonblocking"): (4.36, 3.47),
        ("cnn_loader_w0", "cuda_graph"): (1.26, 1.43),
        ("sync_item_b1024", "graph_without_sync"): (8.43, 8.15),
        ("sync_item_b1024", "adamw_fused"): (1.51, 1.53),
        ("sync_mask_b1024", "graph_without_sync"): (8.50, 8.19),
        ("sync_mask_b1024", "adamw_fused"): (1.44, 1.51),
        ("bert_train", "adamw_fused"): (1.65, 1.76),
        ("gpt2_mid", "cuda_graph"): (5.34, 6.72),
        ("gpt2_mid", "adamw_fused"): (1.05, 0.99),
        ("mlp_infer_b8", "cuda_graph"): (5.92, 7.47),
    }, (11, 9, 6.5, 45.8), {"bert_train"},
        # bert's whole-step graph crashed on the GPU: shown, never measured
        ["bert_train: shown `cuda-graph` 4.89x: not tried on the GPU"], (21, 20, 9.0, 76.3)),
    Pinned("gpu_h200_truth_heldout3", {
        ("seed_1024", "cuda_graph"): (2.38, 1.73),
        ("seed_1024", "addmm"): (1.25, 1.43),
        ("sync_nonzero_b1024", "graph_without_sync"): (10.05, 9.39),
        ("sync_nonzero_b1024", "adamw_fused"): (1.38, 1.54),
        ("mlp_infer_b64", "cuda_graph"): (3.20, 4.91),
    }, (5, 3, 12.6, 37.7), evaluated=(7, 6, 10.7, 28.5)),
    Pinned("gpu_h200_truth_heldout4", {
        ("seed_256", "cuda_graph"): (2.01, 1.69),
        ("seed_256", "addmm"): (1.26, 1.33),
        ("mlp_infer_b512", "cuda_graph"): (3.51, 3.22),
        ("infer_b8", "cuda_graph"): (4.89, 6.28),
        ("sync_cpu_b1024", "graph_without_sync"): (8.99, 7.67),
        ("sync_cpu_b1024", "adamw_fused"): (1.50, 1.57),
        ("sync_print_b2048", "graph_without_sync"): (6.01, 6.45),
        ("sync_print_b2048", "adamw_fused"): (1.34, 1.67),
        ("mlp_loader_w1", "workers4_pin_nonblocking"): (5.13, 5.79),
    }, (9, 9, 11.5, 22.1), evaluated=(16, 14, 6.2, 27.9)),
    Pinned("gpu_h200_truth_heldout5", {
        ("seed_512", "cuda_graph"): (2.72, 1.84),
        ("seed_512", "addmm"): (1.29, 1.28),
        ("mlp_infer_b32", "cuda_graph"): (3.76, 4.01),
        ("infer_b32", "cuda_graph"): (2.24, 1.59),
        ("sync_mask_b2048", "graph_without_sync"): (6.81, 6.09),
        ("sync_item_b4096", "graph_without_sync"): (4.89, 5.72),
        ("sync_item_b4096", "adamw_fused"): (1.32, 1.54),
        ("sync_nonzero_b4096", "graph_without_sync"): (5.84, 4.81),
        ("sync_nonzero_b4096", "adamw_fused"): (1.40, 1.57),
        ("cnn_loader_w2_pin", "cuda_graph"): (2.01, 1.03),
    }, (10, 7, 14.4, 95.1), {"cnn_loader_w2_pin"},
        # the mask step's fused AdamW hit a device-side assert on the GPU: shown, not measured
        ["sync_mask_b2048: shown `fused-optimizer` 1.38x: not tried on the GPU"],
        (19, 16, 2.6, 248.0), {"cnn_loader_w2_pin"}),
    Pinned("gpu_h200_truth_heldout6", {
        ("seed_2048", "cuda_graph"): (1.96, 0.85),
        ("seed_2048", "addmm"): (1.25, 1.47),
        ("mlp_infer_b16", "cuda_graph"): (7.57, 4.70),
        ("infer_b16", "cuda_graph"): (4.92, 4.83),
        ("sync_item_b2048", "graph_without_sync"): (5.62, 6.13),
        ("sync_item_b2048", "adamw_fused"): (1.44, 1.63),
        ("sync_cpu_b4096", "graph_without_sync"): (3.96, 5.61),
        ("sync_cpu_b4096", "adamw_fused"): (1.34, 1.62),
        ("sync_print_b1024", "graph_without_sync"): (7.53, 8.69),
        ("sync_print_b1024", "adamw_fused"): (1.29, 1.61),
        ("mlp_loader_w2_pin", "cuda_graph"): (4.08, 6.48),
    }, (11, 7, 17.5, 130.1), {"seed_2048"}, evaluated=(20, 17, 5.1, 66.5)),
    # recorded with the call's input bytes: seed_3072's graph (measured 0.91x) is replayed
    # below 1.01x once its 18 MiB input copy is counted, so it is not offered
    Pinned("gpu_h200_truth_heldout7", {
        ("seed_3072", "addmm"): (1.33, 1.36),
        ("seed_1536", "cuda_graph"): (1.92, 1.20),
        ("seed_1536", "addmm"): (1.28, 1.39),
        ("mlp_infer_b4096", "cuda_graph"): (1.01, 1.01),
        ("mlp_infer_b1024", "cuda_graph"): (1.06, 1.35),
        ("infer_b128", "cuda_graph"): (1.02, 1.04),
        ("infer_b4", "cuda_graph"): (3.95, 3.42),
        ("sync_item_b512", "graph_without_sync"): (7.31, 6.42),
        ("sync_item_b512", "adamw_fused"): (1.41, 1.50),
        ("sync_nonzero_b2048", "graph_without_sync"): (5.05, 4.86),
        ("cnn_loader_w1", "workers4_pin_nonblocking"): (1.59, 3.19),
    }, (11, 9, 7.8, 59.5), {"seed_1536", "mlp_infer_b4096"},
        ["sync_nonzero_b2048: shown `fused-optimizer` 1.42x: not tried on the GPU"],
        (20, 18, 6.2, 35.5), {"seed_1536"}),
    # the host ran slower in the recordings than in their ground truth: as shown misses,
    # with the baseline known the replay does not
    Pinned("gpu_h200_truth_heldout8", {
        ("seed_768", "cuda_graph"): (3.09, 1.75),
        ("seed_768", "addmm"): (1.39, 1.41),
        ("seed_2560", "cuda_graph"): (1.36, 0.89),
        ("seed_2560", "addmm"): (1.29, 1.33),
        ("mlp_infer_b256", "cuda_graph"): (3.58, 3.18),
        ("mlp_infer_b2048", "cuda_graph"): (1.04, 1.66),
        ("infer_b2", "cuda_graph"): (11.45, 6.49),
        ("infer_b64", "cuda_graph"): (1.42, 1.08),
        ("sync_print_b4096", "graph_without_sync"): (5.64, 5.48),
        ("sync_print_b4096", "adamw_fused"): (1.36, 1.45),
        ("mlp_loader_w1_pin", "workers4_pin_nonblocking"): (1.83, 5.72),
    }, (11, 5, 32.2, 76.8), {"seed_2560", "sync_cpu_b2048", "mlp_infer_b2048"},
        # its ground truth process aborted on the GPU: recorded, never measured
        ["sync_cpu_b2048: no measured fix or no run folder"],
        (15, 12, 7.6, 46.3), {"sync_cpu_b2048"}),
    # sets seven and eight recorded again, each fix timed in the recording's own process
    Pinned("gpu_h200_truth_same_process", {
        ("cnn_loader_w1", "workers4_pin_nonblocking"): (1.71, 3.04),
        ("infer_b128", "cuda_graph"): (1.02, 1.04),
        ("infer_b2", "cuda_graph"): (8.91, 9.29),
        ("infer_b4", "cuda_graph"): (4.79, 8.99),
        ("infer_b64", "cuda_graph"): (1.04, 1.08),
        ("mlp_infer_b1024", "cuda_graph"): (2.70, 2.59),
        ("mlp_infer_b2048", "cuda_graph"): (1.34, 1.48),
        ("mlp_infer_b256", "cuda_graph"): (2.44, 2.29),
        ("mlp_infer_b4096", "cuda_graph"): (1.07, 1.02),
        ("mlp_loader_w1_pin", "workers4_pin_nonblocking"): (4.45, 6.04),
        ("seed_1536", "cuda_graph"): (2.84, 1.64),
        ("seed_1536", "addmm"): (1.32, 1.33),
        ("seed_2560", "addmm"): (1.33, 1.32),
        ("seed_2560", "cuda_graph"): (1.16, 0.88),
        ("seed_3072", "addmm"): (1.34, 1.33),
        ("seed_768", "cuda_graph"): (2.25, 1.63),
        ("seed_768", "addmm"): (1.28, 1.30),
        ("sync_nonzero_b2048", "graph_without_sync"): (6.73, 6.78),
        ("sync_nonzero_b2048", "adamw_fused"): (1.26, 1.66),
    }, (19, 13, 5.3, 73.3), {"mlp_infer_b4096"}, evaluated=(27, 23, 5.4, 41.6)),
    # loaders with worker processes, written after a loop that waits for them stopped
    # predicting the fixes of the call: mlp_loader_w3's graph (2.11x measured) and
    # cnn_loader_w2's (1.17x) are offered with their bounds only
    Pinned("gpu_h200_truth_heldout9", {
        ("mlp_loader_w3", "workers4_pin_nonblocking"): (1.83, 1.54),
        ("mlp_loader_w3_pin", "cuda_graph"): (4.30, 1.26),
        ("cnn_loader_w2", "workers4_pin_nonblocking"): (1.58, 1.48),
        ("cnn_loader_w3_pin", "cuda_graph"): (1.83, 2.10),
    }, (4, 3, 15.9, 241.4), {"mlp_loader_w3"},
        ["mlp_loader_w3_pin: shown `fused-optimizer` 1.06x: not tried on the GPU"],
        (14, 8, 19.1, 303.3), {"cnn_loader_w2", "mlp_loader_w3", "mlp_loader_w3_pin"}),
    # recorded with the block of calls after the window: the pace of a step without a loader
    Pinned("gpu_h200_truth_heldout10", {
        ("seed_1280", "cuda_graph"): (1.71, 1.60),
        ("seed_1280", "addmm"): (1.22, 1.34),
        ("seed_3584", "addmm"): (1.27, 1.30),
        ("mlp_infer_b128", "cuda_graph"): (2.48, 2.55),
        ("mlp_infer_b3072", "cuda_graph"): (1.04, 1.01),
        ("infer_b12", "cuda_graph"): (2.84, 4.91),
        ("infer_b48", "cuda_graph"): (1.96, 1.93),
        ("sync_item_b256", "graph_without_sync"): (8.05, 7.73),
        ("sync_item_b256", "adamw_fused"): (1.38, 1.78),
    }, (9, 8, 4.2, 42.2), {"sync_print_b512", "mlp_infer_b3072"},
        # its ground truth process aborted on the GPU: recorded, never measured
        ["sync_print_b512: no measured fix or no run folder"],
        (13, 13, 5.0, 22.0), {"sync_print_b512"}),
    # every kind of the earlier sets at new sizes, two loaders and a GPT-2, the model unchanged
    Pinned("gpu_h200_truth_heldout11", {
        ("seed_96", "cuda_graph"): (1.62, 1.73),
        ("seed_96", "addmm"): (1.22, 1.36),
        ("seed_1792", "addmm"): (1.33, 1.34),
        ("mlp_infer_b24", "cuda_graph"): (3.89, 4.12),
        ("mlp_infer_b1536", "cuda_graph"): (1.58, 1.04),
        ("infer_b3", "cuda_graph"): (8.26, 9.40),
        ("infer_b96", "cuda_graph"): (1.04, 1.05),
        ("sync_mask_b4096", "graph_without_sync"): (6.88, 5.95),
        ("sync_mask_b4096", "adamw_fused"): (1.36, 1.66),
        ("sync_nonzero_b512", "graph_without_sync"): (10.09, 9.80),
        ("mlp_loader_w0_pin", "workers4_pin_nonblocking"): (4.43, 5.20),
        ("mlp_loader_w0_pin", "cuda_graph"): (1.08, 1.20),
        ("cnn_loader_w3", "workers4_pin_nonblocking"): (1.44, 1.23),
        ("gpt2_small", "cuda_graph"): (15.02, 10.85),
        ("gpt2_small", "adamw_fused"): (1.08, 1.05),
    }, (15, 13, 10.1, 51.5), {"cnn_loader_w3", "sync_item_b768"},
        # sync_item_b768's ground-truth process aborted on a device-side assert, and
        # sync_nonzero_b512's fused optimizer variant failed with one
        ["sync_item_b768: no measured fix or no run folder",
         "sync_nonzero_b512: shown `fused-optimizer` 1.45x: not tried on the GPU"],
        (24, 22, 7.1, 32.2), {"cnn_loader_w3", "sync_item_b768"}),
    # written after the folded bias add took the `+` dispatch and matmul's own time: the goal
    # met on a held-out set as shown (median within 10%, none over 25%, every top pick)
    Pinned("gpu_h200_truth_heldout12", {
        ("seed_128", "cuda_graph"): (2.06, 1.75),
        ("seed_128", "addmm"): (1.26, 1.33),
        ("seed_384", "cuda_graph"): (1.66, 1.84),
        ("seed_384", "addmm"): (1.23, 1.43),
        ("seed_640", "cuda_graph"): (1.54, 1.67),
        ("seed_640", "addmm"): (1.25, 1.38),
        ("seed_2304", "addmm"): (1.36, 1.34),
        ("seed_3328", "addmm"): (1.26, 1.29),
        ("mlp_infer_b40", "cuda_graph"): (3.73, 3.07),
        ("infer_b6", "cuda_graph"): (4.67, 3.75),
        ("sync_item_b3072", "graph_without_sync"): (5.17, 5.89),
        ("sync_item_b3072", "adamw_fused"): (1.48, 1.66),
        ("cnn_loader_w1_pin", "workers4_pin_nonblocking"): (2.85, 2.89),
    }, (13, 13, 9.8, 24.5), set(), evaluated=(20, 17, 7.5, 38.4)),
    # written after a CUDA graph's fix took in what capture needs (the call's syncs and a
    # selection's machinery gone, a capturable optimizer's kernels); the syncing steps' fixes
    # each timed beside the baseline in a process of its own
    Pinned("gpu_h200_truth_heldout13", {
        ("gpt2_wide", "cuda_graph"): (7.10, 5.26),
        ("gpt2_wide", "adamw_fused"): (1.08, 0.94),
        ("gpt2_deep", "cuda_graph"): (10.35, 10.13),
        ("gpt2_deep", "adamw_fused"): (1.06, 0.93),
        ("seed_448", "cuda_graph"): (1.76, 1.73),
        ("seed_448", "addmm"): (1.23, 1.43),
        ("seed_2816", "addmm"): (1.36, 1.38),
        ("mlp_infer_b768", "cuda_graph"): (2.02, 2.26),
        ("infer_b24", "cuda_graph"): (1.72, 1.83),
        ("sync_item_b1536", "graph_without_sync"): (6.30, 6.36),
        ("sync_item_b1536", "adamw_fused"): (1.56, 1.48),
        ("sync_mask_b3072", "graph_without_sync"): (6.21, 5.51),
        ("sync_mask_b3072", "adamw_fused"): (1.40, 1.48),
        ("sync_nonzero_b3072", "graph_without_sync"): (5.84, 5.08),
        ("sync_nonzero_b3072", "adamw_fused"): (1.47, 1.33),
        ("sync_cpu_b3072", "graph_without_sync"): (5.11, 5.41),
        ("sync_cpu_b3072", "adamw_fused"): (1.62, 1.46),
        ("sync_print_b768", "graph_without_sync"): (7.90, 7.75),
        ("sync_print_b768", "adamw_fused"): (1.41, 1.33),
        ("mlp_loader_w4", "workers8_pin_nonblocking"): (1.39, 1.55),
        ("cnn_loader_w4_pin", "cuda_graph"): (1.97, 2.05),
    }, (21, 20, 6.6, 34.9), {"mlp_loader_w4"}, evaluated=(38, 34, 8.0, 62.2),
        evaluated_not_the_best={"mlp_loader_w4"}),
    # sets seven and eight's workloads recorded again with that block, judged in their process
    Pinned("gpu_h200_truth_same_process2", {
        ("cnn_loader_w1", "workers4_pin_nonblocking"): (2.27, 2.24),
        ("infer_b128", "cuda_graph"): (1.03, 1.04),
        ("infer_b2", "cuda_graph"): (6.81, 5.49),
        ("infer_b4", "cuda_graph"): (3.85, 4.22),
        ("infer_b64", "cuda_graph"): (1.17, 1.38),
        ("mlp_infer_b1024", "cuda_graph"): (1.21, 1.41),
        ("mlp_infer_b2048", "cuda_graph"): (1.03, 1.05),
        ("mlp_infer_b256", "cuda_graph"): (3.14, 2.07),
        ("mlp_infer_b4096", "cuda_graph"): (1.01, 1.01),
        ("mlp_loader_w1_pin", "workers4_pin_nonblocking"): (4.77, 4.59),
        ("seed_1536", "addmm"): (1.38, 1.30),
        ("seed_1536", "cuda_graph"): (1.16, 1.19),
        ("seed_2560", "addmm"): (1.33, 1.35),
        ("seed_3072", "addmm"): (1.34, 1.37),
        ("seed_768", "cuda_graph"): (1.77, 1.27),
        ("seed_768", "addmm"): (1.23, 1.08),
        ("sync_nonzero_b2048", "graph_without_sync"): (6.48, 5.77),
        ("sync_nonzero_b2048", "adamw_fused"): (1.38, 1.79),
    }, (18, 16, 7.4, 51.9), {"mlp_infer_b4096", "mlp_infer_b2048"}, evaluated=(27, 24, 7.2, 61.0),
        evaluated_not_the_best={"seed_1536"}),
    # the tenth set's workloads, judged in their own process: the goal met
    Pinned("gpu_h200_truth_same_process3", {
        ("infer_b12", "cuda_graph"): (4.28, 3.51),
        ("infer_b48", "cuda_graph"): (1.36, 1.42),
        ("mlp_infer_b128", "cuda_graph"): (2.46, 2.42),
        ("mlp_infer_b3072", "cuda_graph"): (1.02, 1.01),
        ("seed_1280", "cuda_graph"): (1.46, 1.62),
        ("seed_1280", "addmm"): (1.27, 1.31),
        ("seed_3584", "addmm"): (1.28, 1.31),
        ("sync_item_b256", "graph_without_sync"): (8.21, 7.77),
        ("sync_item_b256", "adamw_fused"): (1.46, 1.36),
    }, (9, 9, 4.3, 21.9), {"mlp_infer_b3072"}, evaluated=(13, 13, 3.1, 9.1)),
]


def _summary(got: dict[str, float]) -> tuple[float, ...]:
    return (got["pairs"], got["within_25_pct"], got["median_abs_error_pct"],
            got["max_abs_error_pct"])


@pytest.mark.slow
@pytest.mark.parametrize("pinned", SETS, ids=[s.folder for s in SETS])
def test_the_shown_predictions_and_their_errors(pinned: Pinned) -> None:
    folder = DATA / pinned.folder
    data = json.loads((folder / "ground_truth.json").read_text())
    notes: list[str] = []
    workloads = [as_shown.shown_workload(folder, name, w, notes)
                 for name, w in data["workloads"].items()]
    got = {(p.workload, p.fix): (p.predicted, p.measured) for w in workloads for p in w.pairs}
    assert set(got) == set(pinned.shown)
    for key, (predicted, measured) in pinned.shown.items():
        assert got[key][0] == pytest.approx(predicted, abs=0.01), key
        assert got[key][1] == pytest.approx(measured, abs=0.01), key
    assert _summary(evaluate.summarize(workloads)) == pytest.approx(pinned.summary, abs=0.1)
    assert {w.name for w in workloads if not w.top_is_best} == pinned.not_the_best
    # tf32 was never timed in these sets: its "not tried on the GPU" notes are left out
    assert [n for n in notes if "`tf32`" not in n] == pinned.notes


@pytest.mark.slow
@pytest.mark.parametrize("pinned", SETS, ids=[s.folder for s in SETS])
def test_the_model_with_the_profiler_free_baseline_known(pinned: Pinned) -> None:
    """evaluate.py on the same set: the host scaled to the ground truth's own baseline."""
    folder = evaluate.evaluate_folder(DATA / pinned.folder)
    got = evaluate.report([folder])["all"]
    assert _summary(got) == pytest.approx(pinned.evaluated, abs=0.1)
    assert {w.name for w in folder.workloads if not w.top_is_best} == (
        pinned.evaluated_not_the_best)


def test_a_shown_graph_pairs_with_the_sync_free_graph_only_where_no_plain_one_was_timed() -> None:
    by_named = as_shown._measured_by_named(["cuda_graph", "graph_without_sync"])
    assert by_named["cuda-graph"] == ["cuda_graph"]
    assert as_shown._measured_by_named(["graph_without_sync"])["cuda-graph"] == [
        "graph_without_sync"]


def test_the_fourth_set_holds_what_the_recorder_now_times() -> None:
    """Every run of the fourth set has the untraced time between calls and the closing
    sync's own cost, and the reference reads them (microseconds)."""

    folder = DATA / "gpu_h200_truth_heldout4"
    data = json.loads((folder / "ground_truth.json").read_text())
    for name, w in data["workloads"].items():
        ref = committed.run(folder / w["record"]["run"]).analysis.reference
        assert ref.between_us is not None and ref.between_us > 0, name
        assert ref.sync_us is not None and 0 < ref.sync_us < 50, name
        assert ref.call_us is not None and ref.call_target_us is not None
        assert ref.call_target_us == pytest.approx(ref.call_us - ref.sync_us)


def test_the_time_between_calls_is_shown_beside_its_untraced_time() -> None:
    """seed_256: 118 us between calls profiled, 18.8 us between warm-up calls: the summary
    says most of it is the profiler's; a DataLoader's loop (mlp_loader_w1) gets no untraced
    time, the warm-up gaps do not show a prefetching loader's pace."""
    from autoprof.analysis.report.text import untraced_between_clause

    folder = DATA / "gpu_h200_truth_heldout4"
    data = json.loads((folder / "ground_truth.json").read_text())
    seed = committed.run(folder / data["workloads"]["seed_256"]["record"]["run"]).summary()
    bd = seed["breakdown"]
    assert bd["between_calls_untraced_us"] == pytest.approx(18.776, abs=0.01)
    assert bd["between_calls_us"] == pytest.approx(117.7, abs=0.1)
    clause = untraced_between_clause(bd["between_calls_us"], bd["between_calls_untraced_us"])
    assert clause == ("; without the profiler 18.8 µs (the least between warm-up calls): "
                      "98.9 µs of it is the profiler's (its step bookkeeping and its cost on "
                      "the loop's ops), not the loop's")
    assert untraced_between_clause(30.0, 20.0) == (
        "; without the profiler 20 µs (the least between warm-up calls)")
    assert untraced_between_clause(30.0, None) == ""
    loader = committed.run(folder / data["workloads"]["mlp_loader_w1"]["record"]["run"])
    assert loader.summary()["breakdown"]["between_calls_untraced_us"] is None
    assert loader.analysis.reference.between_us is not None  # timed, not shown


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "without"), [
    ("gpu_h200_truth_heldout10", (9, 6, 12.0, 39.6)),
    ("gpu_h200_truth_same_process2", (18, 14, 3.5, 70.6)),
    ("gpu_h200_truth_same_process3", (9, 5, 9.1, 68.0)),
])
def test_the_same_runs_paced_as_before_the_block_after_the_window(
        tmp_path: Path, folder: str, without: tuple[float, ...]) -> None:
    """The recordings with `after_window_iter_ms` taken out of their manifests: the summary
    paces to the fastest untraced call, as it did before the block (docs/gpu-validation.md
    compares the two on the same runs)."""
    copy = tmp_path / folder
    shutil.copytree(DATA / folder, copy)
    for path in copy.glob("runs/*/*/manifest.json"):
        data = json.loads(path.read_text())
        assert data.pop("after_window_iter_ms") > 0
        path.write_text(json.dumps(data))
    data = json.loads((copy / "ground_truth.json").read_text())
    workloads = [as_shown.shown_workload(copy, name, w, [])
                 for name, w in data["workloads"].items()]
    assert _summary(evaluate.summarize(workloads)) == pytest.approx(without, abs=0.1)
