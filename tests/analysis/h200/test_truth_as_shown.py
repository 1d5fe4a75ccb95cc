"""What a user reads on the held-out H200 sets, held to the goal the model states: on the sets
where docs/validation.md reports the goal met, every opportunity's predicted_speedup as the
summary writes it is within 25% of the fix applied by hand and timed without a profiler, the
median within 10%, and the top pick is the best fix measured. The tables over every set are
the validation lab's (`python -m benchmarks.validation`, benchmarks/validation/results/),
and so is the replay with the set's profiler-free baseline known
(benchmarks/validation/checks/test_evaluate.py); nothing here is a prediction copied in."""

from __future__ import annotations

import json
import re

import pytest
from support.store import committed
from support.truth import truth_dir
from support.truth_pairs import FIX_OF, held_to_the_goal, shown_workload

# the sets on which the goal is reported met as shown (docs/validation.md)
GOAL_MET = ("gpu_h200_truth_heldout12", "gpu_h200_truth_same_process3")


@pytest.mark.slow
@pytest.mark.parametrize("name", GOAL_MET)
def test_each_shown_prediction_is_within_the_goal_of_the_fix_timed_by_hand(name: str) -> None:
    notes: list[str] = []
    folder = truth_dir(name)
    truth = json.loads((folder / "ground_truth.json").read_text())
    held_to_the_goal([shown_workload(folder, workload, w, notes)
                      for workload, w in truth["workloads"].items()])
    # every shown fix the truth harness can time was timed; only fixes it never applies by
    # hand (the catalogue's newer entries: tf32, vectorise, bf16-autocast) go unpaired
    timed = set(FIX_OF.values())
    assert [n for n in notes if _shown_fix(n) in timed or _shown_fix(n) is None] == []


def _shown_fix(note: str) -> str | None:
    found = re.search(r"shown `([^`]+)`", note)
    return found.group(1) if found else None


def test_the_fourth_set_holds_what_the_recorder_now_times() -> None:
    """Every run of the fourth set has the untraced time between calls and the closing
    sync's own cost, and the reference reads them (microseconds)."""

    folder = truth_dir("gpu_h200_truth_heldout4")
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

    folder = truth_dir("gpu_h200_truth_heldout4")
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
