"""autoprof diff: the verdict, its interval, comparability and the ranked causes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.store import committed

from autoprof.analysis.diff import (
    diff_facts,
    exit_status,
    median_change,
    render_markdown,
    render_text,
)
from autoprof.analysis.diff.facts import KernelFacts, OpFacts, RunFacts
from autoprof.analysis.diff.result import Diff
from autoprof.analysis.diff.significance import repeated_change
from autoprof.analysis.diff.user_ops import UserOpFacts
from autoprof.analysis.report.schema import diff_errors, validate_diff

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "traces" / "examples"


def _facts(step_us: list[float], **changes: object) -> RunFacts:
    base = RunFacts(
        label="a", name="train_step", device="NVIDIA H200", is_cuda=True,
        versions={"torch": "2.11.0+cu130", "cuda": "cu130"},
        options={"schedule": {"wait": 1, "warmup": 1, "active": 5}, "record_shapes": True},
        world_size=1, step_us=step_us, gpu_us=[s / 2 for s in step_us],
        buckets_us={"gpu_compute": 500.0, "host_launch": 500.0},
        launches_per_step=10.0, memory_peak_bytes=None, mfu_pct=None,
        ops={"aten::mm": OpFacts(400.0, 300.0, 2.0, "[[64, 64], [64, 64]]",
                                 "['c10::BFloat16', 'c10::BFloat16']"),
             "aten::add": OpFacts(100.0, 50.0, 1.0, "[[64, 64], [64]]", "")},
        kernels={"gemm_bf16": KernelFacts(300.0, 2.0, "aten::mm")},
        user_ops={"aten::matmul": UserOpFacts(700.0, 2.0, "[[64, 64], [64, 64]]",
                                              "['c10::BFloat16', 'c10::BFloat16']",
                                              {"aten::mm": 700.0}),
                  "aten::add": UserOpFacts(150.0, 1.0, "[[64, 64], [64]]", "")},
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def checked(d: Diff) -> Diff:
    """``d``, once its JSON is shown to be what --json prints and valid against the schema."""
    validate_diff(json.loads(json.dumps(d.to_json(), allow_nan=False)))
    return d


def test_same_samples_are_no_significant_change() -> None:
    same = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    change = median_change(same, list(reversed(same)))
    assert change.verdict == "no significant change"
    assert change.change_pct == 0.0
    assert change.ci_low_pct is not None and change.ci_low_pct <= 0 <= (change.ci_high_pct or 0)


def test_clear_slowdown_is_slower_with_interval_around_the_change() -> None:
    a = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]
    b = [v * 1.10 for v in a]
    change = median_change(a, b, noise_floor_pct=1.0)  # a quiet machine's spread
    assert change.verdict == "slower"
    assert change.change_pct == pytest.approx(10.0)
    assert change.ci_low_pct is not None and change.ci_high_pct is not None
    assert 0 < change.ci_low_pct <= 10.0 <= change.ci_high_pct


def test_a_change_under_the_floor_of_between_run_noise_is_no_significant_change() -> None:
    # steps within 0.05% of each other: a bootstrap of them alone calls +1% (or +10%)
    # slower; the between-run floor says what one run a side cannot see
    a = [1000.0, 1000.5, 999.5, 1000.2, 999.8]
    change = median_change(a, [v * 1.01 for v in a], noise_floor_pct=1.0)
    assert change.verdict == "no significant change"
    assert change.between_run_source == "floor" and change.between_run_pct == pytest.approx(1.0)
    assert change.min_detectable_pct is not None and 2.5 < change.min_detectable_pct < 3.2
    up = 1 + change.min_detectable_pct / 100
    assert f"changes between {1 / up:.2f}x and {up:.2f}x cannot be told" in change.reason
    assert median_change(a, [v * 1.01 for v in a], noise_floor_pct=0.1).verdict == "slower"
    # the default (CPU) floor, 13%: a 10% change of one run a side is no verdict
    default = median_change(a, [v * 1.10 for v in a])
    assert default.between_run_pct == pytest.approx(13.0)
    assert default.verdict == "no significant change"
    assert default.min_detectable_pct is not None and default.min_detectable_pct > 30


def test_repeats_measure_the_spread_between_runs() -> None:
    # three runs a side whose levels differ by ~10% from run to run, each run's steps tight:
    # B's runs are 4% slower on average, inside the runs' spread: no verdict, and the spread
    # measured from the repeats is in the interval
    steady = [1000.0, 1001.0, 999.0, 1000.5, 999.5, 1000.0]
    a = [[v * k for v in steady] for k in (1.0, 1.10, 0.92)]
    b = [[v * k * 1.04 for v in steady] for k in (1.08, 0.95, 1.0)]
    change = repeated_change(a, b)
    assert (change.runs_a, change.runs_b, change.samples_a) == (3, 3, 18)
    assert change.between_run_source == "repeats"
    assert change.between_run_pct is not None and 5 < change.between_run_pct < 12
    assert change.verdict == "no significant change"
    assert change.ci_low_pct is not None and change.ci_low_pct < 0 < (change.ci_high_pct or 0)
    # one run a side (the first of each) cannot see that spread: with a quiet machine's
    # floor it calls it slower
    assert median_change(a[0], b[0], noise_floor_pct=1.0).verdict == "slower"
    # repeats are not held to the one-run floor: their own spread is the interval's
    assert repeated_change(a, b, noise_floor_pct=50.0) == change
    # a change far beyond the spread is seen through it
    assert repeated_change(a, [[v * 1.5 for v in r] for r in a]).verdict == "slower"


def test_a_run_whose_load_changed_while_it_ran_widens_its_interval() -> None:
    # each run's thirds differ (the machine's load changed): their spread is the
    # between-run noise, far above the floor
    calm, busy = [1000.0, 1002.0, 998.0, 1001.0], [1300.0, 1302.0, 1298.0, 1301.0]
    a, b = calm + busy + calm, [v * 1.05 for v in busy + calm + calm]
    change = median_change(a, b, noise_floor_pct=1.0)
    assert change.between_run_source == "blocks"
    assert change.between_run_pct is not None and change.between_run_pct > 10
    assert change.verdict == "no significant change"
    calm_b = [v * 1.05 for v in calm * 3]
    assert median_change(calm * 3, calm_b, noise_floor_pct=1.0).verdict == "slower"


def test_too_few_steps_gives_no_verdict() -> None:
    change = median_change([1.0, 2.0], [1.0, 2.0, 3.0])
    assert change.verdict == "too few steps"
    assert change.change_pct is None and "A has 2" in change.reason


def test_zero_or_missing_step_times_are_no_samples() -> None:
    a = [0.0, 1000.0, 0.0, 1010.0, 990.0, 1005.0]  # zeros would give infinite resampled changes
    change = median_change(a, [v * 1.2 for v in a], noise_floor_pct=1.0)
    assert change.samples_a == 4 and change.verdict == "slower"
    assert all(np.isfinite([change.ci_low_pct, change.ci_high_pct]))
    few = median_change([0.0, 0.0, 0.0, 5.0], [5.0, 5.0, 5.0])
    assert few.verdict == "too few steps" and "A has 1" in few.reason


def test_the_bootstrap_is_deterministic() -> None:
    a, b = [10.0, 12.0, 11.0, 13.0], [12.0, 14.0, 11.5, 15.0]
    assert median_change(a, b) == median_change(a, b)


def test_other_device_or_ranks_is_not_comparable_and_exits_2() -> None:
    a = _facts([1000.0] * 5)
    for b in (replace(a, device="NVIDIA H100"), replace(a, world_size=2)):
        d = checked(diff_facts(a, b))
        assert d.comparability.status == "not comparable"
        assert d.verdict == "not comparable" and d.step is None
        assert exit_status(d, 5.0) == 2


def test_heavy_ops_on_other_shapes_are_not_comparable() -> None:
    a = _facts([1000.0] * 5)
    bigger = dict(a.ops)
    bigger["aten::mm"] = replace(a.ops["aten::mm"], input_shapes="[[4096, 4096], [4096, 4096]]")
    d = checked(diff_facts(a, replace(a, ops=bigger)))
    assert d.comparability.status == "not comparable"
    reason = d.comparability.blocking[0]
    assert "input shapes" in reason and "aten::mm" in reason


def test_other_torch_and_schedule_are_caveats() -> None:
    a = _facts([1000.0] * 5)
    b = replace(a, versions={"torch": "2.12.0+cu130", "cuda": "cu130"},
                options={**a.options, "schedule": {"wait": 0, "warmup": 1, "active": 5}})
    d = checked(diff_facts(a, b))
    assert d.comparability.status == "comparable with caveats"
    assert any(c.startswith("torch:") for c in d.comparability.caveats)
    assert any(c.startswith("schedule:") for c in d.comparability.caveats)


def test_the_planted_cause_comes_first_and_the_gate_decides_the_exit() -> None:
    a = _facts([1000.0, 1004.0, 996.0, 1002.0, 998.0])
    ops = dict(a.ops)
    ops["aten::mm"] = replace(a.ops["aten::mm"], self_device_us_per_step=600.0,
                              input_types="['float', 'float']")
    ops["aten::copy_"] = OpFacts(20.0, 10.0, 1.0, "[[64, 64], [64, 64]]", "")
    user_ops = dict(a.user_ops)
    user_ops["aten::matmul"] = UserOpFacts(1000.0, 2.0, "[[64, 64], [64, 64]]",
                                           "['float', 'float']", {"aten::mm": 1000.0})
    user_ops["aten::clone"] = UserOpFacts(30.0, 1.0, "[[64, 64]]", "", {"aten::copy_": 30.0})
    b = replace(a, label="b", step_us=[v * 1.3 for v in a.step_us], ops=ops,
                kernels={"gemm_fp32": KernelFacts(600.0, 2.0, "aten::mm")}, user_ops=user_ops)
    d = checked(diff_facts(a, b))
    assert d.verdict == "slower"
    assert [c.name for c in d.why][:2] == ["aten::matmul", "aten::clone"]
    assert "input types" in d.why[0].note and "most of it in aten::mm" in d.why[0].note
    assert d.why[1].note.startswith("new")
    assert [c.name for c in d.self_ops][:2] == ["aten::mm", "aten::copy_"]
    renamed = d.kernels[0]
    assert renamed.name == "gemm_fp32" and renamed.note.startswith("renamed from gemm_bf16")
    assert exit_status(d, 5.0) == 1  # +30%, the whole interval above the 5% gate
    judged = d.judged
    assert judged is not None and judged.ci_low_pct is not None and judged.ci_high_pct is not None
    assert judged.ci_low_pct < 50.0 < judged.ci_high_pct  # the interval holds a 50% gate
    assert exit_status(d, 50.0) == 3  # cannot tell: never a pass
    assert exit_status(d, 50.0, cannot_tell_passes=True) == 0
    assert exit_status(d, judged.ci_high_pct) == 0  # a gate at or above the whole interval
    text, markdown = render_text(d), render_markdown(d)
    assert "VERDICT: slower" in text and "aten::mm" in text
    assert markdown.startswith("### autoprof diff: **slower**")
    assert "| op | `aten::matmul` |" in markdown


@pytest.mark.slow
def test_committed_examples_eager_vs_graph_faster_because_launches_go() -> None:
    from autoprof.analysis.diff import diff

    eager = committed.run(next((EXAMPLES / "eager_100").iterdir()))
    graph = committed.run(next((EXAMPLES / "graph_replay").iterdir()))
    d = checked(diff(eager, graph))
    assert d.verdict == "faster"
    assert d.step is not None and d.step.change_pct is not None and d.step.change_pct < -80
    assert d.buckets[0].name == "host_launch" and d.buckets[0].delta_us < 0
    launches = {m.name: m for m in d.metrics}["launches_per_step"]
    assert launches.a is not None and launches.b is not None and launches.b < launches.a
    assert exit_status(d, 5.0) == 0


@pytest.mark.slow
def test_committed_seed_64_vs_4096_not_comparable_because_of_shapes() -> None:
    from autoprof.analysis.diff import diff

    runs = {}
    for folder in sorted((EXAMPLES / "matmul_add").iterdir()):
        run = committed.run(folder)
        shapes = run.ops().set_index("name").loc["aten::mm", "input_shapes"]
        runs.setdefault("4096" if "4096" in shapes else "64", run)
    d = checked(diff(runs["64"], runs["4096"]))
    assert d.verdict == "not comparable"
    assert "input shapes" in " ".join(d.comparability.blocking)
    assert exit_status(d, None) == 2


def test_every_difference_is_listed_with_its_status() -> None:
    a = _facts([1000.0] * 5)
    b = replace(a, device="NVIDIA H100", versions={"torch": "2.12.0+cu130", "cuda": "cu130"},
                options={**a.options, "sync": True}, step_us=[1000.0] * 6)
    d = checked(diff_facts(a, b))
    listed = {x.what: x for x in d.comparability.differences}
    assert set(listed) == {"device", "torch", "steps", "option sync"}
    assert listed["device"].status == "not comparable"
    assert (listed["device"].a, listed["device"].b) == ("NVIDIA H200", "NVIDIA H100")
    assert {listed[k].status for k in ("torch", "steps", "option sync")} == {"caveat"}
    assert (listed["steps"].a, listed["steps"].b) == (5, 6)
    assert d.comparability.blocking == ["device: NVIDIA H200 in A, NVIDIA H100 in B"]
    assert [x.text for x in d.comparability.differences
            if x.status == "caveat"] == d.comparability.caveats
    assert checked(diff_facts(a, a)).comparability.differences == []


def test_shape_differences_name_the_heaviest_ops_shapes() -> None:
    a = _facts([1000.0] * 5)
    bigger = dict(a.ops)
    bigger["aten::mm"] = replace(a.ops["aten::mm"], input_shapes="[[4096, 4096], [4096, 4096]]")
    (shapes,) = checked(diff_facts(a, replace(a, ops=bigger))).comparability.differences
    assert shapes.what == "input shapes" and shapes.status == "not comparable"
    assert shapes.a == "aten::mm [[64, 64], [64, 64]]"
    assert shapes.b == "aten::mm [[4096, 4096], [4096, 4096]]"


def test_same_ranks_give_each_ranks_step_change() -> None:
    steady = [1000.0, 1004.0, 996.0, 1002.0, 998.0]
    a = _facts(steady * 2, world_size=2, step_us_by_rank={0: steady, 1: steady})
    slow = [v * 1.2 for v in steady]
    b = replace(a, step_us=steady + slow, step_us_by_rank={0: steady, 1: slow})
    d = checked(diff_facts(a, b, noise_floor_pct=1.0))
    assert [(r.rank, r.step.verdict) for r in d.ranks] == [
        (0, "no significant change"), (1, "slower")]
    assert d.ranks[1].step.change_pct == pytest.approx(20.0)
    assert "rank 1 step time" in render_text(d) and "rank 1 step time" in render_markdown(d)
    other = replace(b, step_us_by_rank={0: steady, 2: slow})  # not the same ranks
    assert checked(diff_facts(a, other)).ranks == []
    assert checked(diff_facts(_facts(steady), _facts(steady))).ranks == []  # no ranks


def test_a_kernels_changed_launches_are_its_note() -> None:
    a = _facts([1000.0] * 5)
    b = replace(a, step_us=[1100.0] * 5,
                kernels={"gemm_bf16": KernelFacts(400.0, 6.0, "aten::mm")})
    (kernel,) = checked(diff_facts(a, b)).kernels
    assert kernel.note == "launches per step 2 -> 6"


def test_the_schema_catches_a_broken_diff() -> None:
    good = checked(diff_facts(_facts([1000.0] * 5), _facts([1100.0] * 5))).to_json()
    bad = json.loads(json.dumps(good))
    bad["verdict"] = "slowish"
    del bad["ranks"]
    bad["step_time"]["ci_low_pct"] = "5%"
    bad["self_ops"][0]["kind"] = "leaf"
    errors = diff_errors(bad)
    assert any(e.startswith("self_ops/0/kind: 'leaf' is not one of") for e in errors)
    guessed = json.loads(json.dumps(good))
    guessed["step_time"]["between_run_source"] = "guessed"
    assert diff_errors(guessed)
    assert any(e.startswith("(top): 'ranks' is a required property") for e in errors)
    assert any(e.startswith("verdict: 'slowish' is not one of") for e in errors)
    assert any(e.startswith("step_time") for e in errors)
    with pytest.raises(ValueError, match="breaks diff.schema.json"):
        validate_diff(bad)
    assert diff_errors({**good, "a_key_added_later": 1}) == []  # additive keys stay valid


@pytest.mark.slow
def test_committed_two_rank_run_against_itself_gives_each_rank() -> None:
    from autoprof.analysis.diff import diff

    run = committed.run(next((EXAMPLES / "ddp_step").iterdir()))
    d = checked(diff(run, run))
    assert d.verdict == "no significant change"
    assert [r.rank for r in d.ranks] == [0, 1]
    assert all(r.step.change_pct == 0 and r.step.samples_a >= 3 for r in d.ranks)


def test_user_ops_roll_children_and_gpu_work_up_to_the_outermost_op() -> None:
    import pandas as pd

    from autoprof.analysis.diff.user_ops import outermost_ops, user_op_facts

    # ProfilerStep > aten::item > aten::_local_scalar_dense > cudaStreamSynchronize, and
    # ProfilerStep > aten::matmul > aten::mm > cudaLaunchKernel -> gemm (GPU)
    rows = [
        ("ProfilerStep#1", "user_annotation", -1, 100.0, 10.0, False, -1),
        ("aten::item", "cpu_op", 0, 40.0, 1.0, False, -1),
        ("aten::_local_scalar_dense", "cpu_op", 1, 39.0, 4.0, False, -1),
        ("cudaStreamSynchronize", "cuda_runtime", 2, 35.0, 35.0, False, -1),
        ("aten::matmul", "cpu_op", 0, 50.0, 2.0, False, -1),
        ("aten::mm", "cpu_op", 4, 48.0, 43.0, False, -1),
        ("cudaLaunchKernel", "cuda_runtime", 5, 5.0, 5.0, False, -1),
        ("gemm", "kernel", -1, 30.0, 30.0, True, 5),
    ]
    events = pd.DataFrame(rows, columns=["name", "cat", "parent", "dur_us", "self_us",
                                         "is_gpu_work", "op_row"])
    events["step"] = 1
    events["input_dims"] = ""
    events["input_types"] = ""
    assert outermost_ops(events).tolist() == [-1, 1, 1, 1, 4, 4, 4, -1]
    facts = user_op_facts(events, steps=1)
    assert set(facts) == {"aten::item", "aten::matmul"}
    assert facts["aten::matmul"].us_per_step == pytest.approx(50.0 + 30.0)  # host + its GPU work
    assert facts["aten::matmul"].children_us_per_step == {
        "aten::matmul": 2.0, "aten::mm": 43.0 + 30.0, "cudaLaunchKernel": 5.0}
    assert facts["aten::item"].syncs == {"aten::item", "aten::_local_scalar_dense",
                                         "cudaStreamSynchronize"}
    empty = replace(_facts([1000.0] * 5), user_ops={})
    with_sync = replace(empty, user_ops=facts)
    item = {c.name: c for c in checked(diff_facts(empty, with_sync)).ops}["aten::item"]
    assert item.note == ("new; a sync: the host waits for the GPU (cudaStreamSynchronize); "
                         "most of it in cudaStreamSynchronize (+35 µs per step)")


def test_the_one_run_floor_is_the_devices_measured_spread() -> None:
    steady = [1000.0, 1004.0, 996.0, 1002.0, 998.0]
    cuda = checked(diff_facts(_facts(steady), _facts([v * 1.1 for v in steady])))
    cpu_a = replace(_facts(steady), device="CPU", is_cuda=False)
    cpu = checked(diff_facts(cpu_a, replace(cpu_a, step_us=[v * 1.1 for v in steady])))
    assert cuda.step is not None and cuda.step.between_run_pct == pytest.approx(7.0)
    assert cpu.step is not None and cpu.step.between_run_pct == pytest.approx(13.0)
    assert (cuda.step.between_run_source, cpu.step.between_run_source) == ("floor", "floor")
    # +10% with one run a side: beyond neither floor's noise
    assert cuda.verdict == cpu.verdict == "no significant change"
    quiet = checked(diff_facts(cpu_a, replace(cpu_a, step_us=[v * 1.1 for v in steady]),
                               noise_floor_pct=1.0))
    assert quiet.verdict == "slower"
