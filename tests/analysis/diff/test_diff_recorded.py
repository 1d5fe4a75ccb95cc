"""autoprof diff on recordings of benchmarks/diff_validation.py made on an H200 and on the
16-core CPU of its host (tests/analysis/diff/data): their verdicts and first causes, pinned.

Each folder is one recording (12 profiled steps, one run a side): ``same_a00`` and
``same_b00`` the unchanged program, the others one planted change each. The diff is
deterministic (a fixed seed), so these verdicts only move when the method does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.store import committed

from autoprof.analysis import Run
from autoprof.analysis.diff import Diff, diff, exit_status, render_text

DATA = Path(__file__).resolve().parent / "data"
pytestmark = pytest.mark.slow


def _run(machine: str, name: str) -> Run:
    """The one recording of ``name``, loaded and analysed once a session (support/store.py)."""
    return committed.run(next((DATA / machine / name).iterdir()))


def _diff(machine: str, planted: str) -> Diff:
    return diff(_run(machine, "same_a00"), _run(machine, planted))


def test_h200_same_program_is_no_significant_change_with_the_cuda_floor() -> None:
    d = _diff("h200", "same_b00")
    assert d.verdict == "no significant change" and d.judged_on == "step_time"
    assert d.gpu is not None and d.gpu.verdict == "no significant change"  # +0.0%
    assert d.step is not None and d.step.between_run_pct == pytest.approx(7.0)
    assert d.step.change_pct == pytest.approx(-12.0, abs=0.1)
    assert d.step.min_detectable_pct is not None and d.step.min_detectable_pct > 20
    assert exit_status(d, None) == 0


@pytest.mark.parametrize(("planted", "first", "note"), [
    ("tanh50_00", "aten::tanh", "new"),
    ("wide_00", "aten::matmul",
     'input types ["c10::BFloat16", "c10::BFloat16"] -> ["float", "float"]'),
])
def test_h200_planted_changes_are_slower_with_their_op_first(planted: str, first: str,
                                                             note: str) -> None:
    d = _diff("h200", planted)
    assert d.verdict == "slower" and exit_status(d, None) == 1
    assert d.why[0].name == first and d.why[0].note.startswith(note)


@pytest.mark.slow
def test_h200_an_added_item_is_named_the_sync_and_judged_on_the_gpu_time() -> None:
    """The step's +9.9% is under the 22% one run can see; the GPU's work per step, which
    the host's pace does not move, grew 7.2% (its interval 4.2-10.1% above zero), and the
    GPU's work is most of the step: slower, on the GPU time."""
    d = _diff("h200", "item_00")
    assert d.step is not None and d.step.verdict == "no significant change"
    assert d.gpu is not None and d.gpu.change_pct == pytest.approx(7.2, abs=0.1)
    assert d.gpu.between_run_pct == pytest.approx(1.5)
    assert d.verdict == "slower" and d.judged_on == "gpu_time" and exit_status(d, None) == 1
    assert exit_status(d, 15.0) == 0  # under a 15% gate
    assert "on the GPU time per step" in render_text(d)
    assert d.why[0].name == "aten::item"
    assert "a sync: the host waits for the GPU (cudaStreamSynchronize)" in d.why[0].note


def test_h200_half_batches_are_not_comparable_for_their_shapes() -> None:
    d = _diff("h200", "batch_00")
    assert d.verdict == "not comparable" and exit_status(d, None) == 2
    assert "input shapes" in d.comparability.blocking[0]


@pytest.mark.slow
def test_cpu_same_program_and_planted_changes() -> None:
    same = _diff("cpu16", "same_b00")
    assert same.verdict == "no significant change"
    assert same.step is not None and same.step.between_run_pct == pytest.approx(13.0)
    for planted, first in (("tanh50_00", "aten::tanh"), ("wide_00", "aten::matmul")):
        d = _diff("cpu16", planted)
        assert d.verdict == "slower" and d.why[0].name == first
    wide = _diff("cpu16", "wide_00")
    assert wide.why[0].note.startswith('input types ["float", "float"] -> ["double", "double"]')


def test_h200_twenty_pairs_of_the_same_program_raise_no_false_alarm() -> None:
    """benchmarks/results-h200-diff-same.json (`diff_validation.py --device cuda --pairs 20
    --planted 0`, docs/diff.md): one run a side, 20 of 20 pairs `no significant change`;
    three runs a side, 6 of 6."""
    import json

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "results-h200-diff-same.json"
    results = json.loads(path.read_text())
    assert results["recording"]["machine_at_start"]["gpu"] == "NVIDIA H200"
    one, three = results["one_run_a_side"]["same"], results["3_runs_a_side"]["same"]
    assert (one["n"], one["right"]) == (20, 20)
    assert (three["n"], three["right"]) == (6, 6)
    assert all(r["verdict"] == "no significant change" for r in one["rows"])
    assert one["median_min_detectable_pct"] == pytest.approx(21.5, abs=0.05)


@pytest.mark.slow
def test_the_gpu_floor_is_the_spread_between_h200_recordings_of_one_program() -> None:
    """CUDA_GPU_NOISE_FLOOR_PCT: nine programs recorded on two starts of the H200 a day
    apart (tests/data/gpu_h200 and gpu_h200_rerun). A run's median GPU time per step moved
    by 1.3% (sd of one run: the pairs' RMS difference over sqrt 2) while the step time moved
    by up to 50%; none of the nine is a false alarm at the floor."""
    import math

    from autoprof.analysis.diff.significance import CUDA_GPU_NOISE_FLOOR_PCT

    root = Path(__file__).resolve().parents[2] / "data"
    names = ["accuracy_4096", *(f"sweep_n{n}" for n in (64, 128, 256, 512, 1024, 2048,
                                                        4096, 8192))]
    gpu_pct, step_pct = [], []
    for name in names:
        d = diff(committed.run(next((root / "gpu_h200" / name).iterdir())),
                 committed.run(next((root / "gpu_h200_rerun" / name).iterdir())))
        assert d.gpu is not None and d.step is not None and d.verdict == "no significant change"
        gpu_pct.append(d.gpu.change_pct or 0.0)
        step_pct.append(abs(d.step.change_pct or 0.0))
    one_run_sd = math.sqrt(sum(g * g for g in gpu_pct) / len(gpu_pct)) / math.sqrt(2)
    assert one_run_sd == pytest.approx(1.29, abs=0.01)
    assert CUDA_GPU_NOISE_FLOOR_PCT >= one_run_sd
    assert max(step_pct) == pytest.approx(50.3, abs=0.1)


def test_h200_planted_changes_with_the_gpu_time_judged() -> None:
    """benchmarks/results-h200-diff-planted.json (docs/diff.md): two recordings a case, one
    run a side; every planted change slower, the planted op first in 10 of 12."""
    import json

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "results-h200-diff-planted.json"
    one = json.loads(path.read_text())["one_run_a_side"]
    assert (one["same"]["n"], one["same"]["right"]) == (2, 2)
    planted = ("tanh5", "tanh10", "tanh50", "clone", "wide", "item")
    assert all(one[c]["verdicts"] == {"slower": 2} for c in planted)
    assert sum(one[c]["right"] for c in planted) == 10
    assert (one["tanh5"]["right"], one["clone"]["right"]) == (1, 1)
    assert one["batch"]["verdicts"] == {"not comparable": 2}


def test_h200_planted_changes_ten_recordings_a_case() -> None:
    """benchmarks/results-h200-diff-planted-ten.json (docs/diff.md): ten recordings of each
    case on the H200, one run a side, with `why` ranked beyond B's host pace: every planted
    change called slower with the planted op first in at least 9 of 10, the same program
    unchanged in 9 of 10 (that miss and the copy's: the second recording's step 21% and 19%
    faster, most of it aten::mm's host, -70 and -72 us a step)."""
    import json

    path = (Path(__file__).resolve().parents[3] / "benchmarks"
            / "results-h200-diff-planted-ten.json")
    one = json.loads(path.read_text())["one_run_a_side"]
    assert (one["same"]["n"], one["same"]["right"]) == (10, 9)
    for case in ("tanh5", "tanh10", "tanh50", "clone", "wide", "item", "batch"):
        assert one[case]["n"] == 10 and one[case]["right"] >= 9, case
        firsts = [r["planted_rank"] == 0 for r in one[case]["rows"]
                  if r["verdict"] == "slower"]
        if case != "batch":
            assert sum(firsts) >= 9, case
    assert one["clone"]["right"] == 9
    missed = [r for r in one["clone"]["rows"] + one["same"]["rows"]
              if r["verdict"] == "faster"]
    assert len(missed) == 2 and all(r["first"] == "aten::matmul" for r in missed)
