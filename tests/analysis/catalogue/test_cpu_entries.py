"""The catalogue's whole-run entries: `inference-mode` (autograd's graph built, no backward),
`set-num-threads` (steps that wait for cores) and `compile-dynamic` (torch.compile
recompiling). Each fires on a run with its bug and not on the same run without it; a
prediction is held to its own interval around a fix measured by hand on a recorded run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.diagbuild import FakeRun, Trace, ids
from support.store import committed

from autoprof.analysis.analysis import Analysis
from autoprof.analysis.kinds import CATALOGUE_FIX_NAMES

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = DATA / "gpu_h100_catalogue"
CPU_TRUTH = Path(__file__).resolve().parents[3] / "benchmarks" / "validation" / "data" / \
    "cpu_heldout" / "truth.json"


def _manifest(**extra: Any) -> dict[str, Any]:
    return {"name": "score", "options": {"warmup": 3, "schedule": {"wait": 1, "warmup": 1,
                                                                   "active": 3}},
            "warmup_call_ms": [0.5, 0.4, 0.4], "wait_call_ms": [0.4], **extra}


def _linears(grad: bool, backward: bool = False, layers: int = 8) -> Trace:
    """Steps of `layers` Linear layers (linear > t, addmm), each a node pair when `grad`;
    `backward`: a backward node evaluated at the end of each step."""
    t = Trace()
    ts, seq = 1000.0, 0
    for n in range(3):
        t.step(n, ts, 400.0)
        t.cpu("score", ts + 1.0, 398.0, cat="user_annotation")
        at = ts + 2.0
        for _ in range(layers):
            marks = ({"seq": seq}, {"seq": seq + 1}) if grad else ({}, {})
            t.cpu("aten::linear", at, 40.0, **marks[0])
            t.cpu("aten::t", at + 1.0, 4.0, **marks[0])
            t.cpu("aten::addmm", at + 6.0, 30.0, **marks[1])
            seq += 2 if grad else 0
            at += 42.0
        if backward:
            t.cpu("autograd::engine::evaluate_function: AddmmBackward0", at, 20.0)
        ts += 410.0
    return t


def _opportunity(run: Any, fix: str) -> dict[str, Any] | None:
    return next((o for o in Analysis(run).opportunities if o.get("fix") == fix), None)


def _within(opp: dict[str, Any], measured: float) -> bool:
    band = opp["predicted_interval"]
    return float(band["low"]) <= measured <= float(band["high"])


def test_the_catalogue_fix_names_include_the_three_entries() -> None:
    assert {"inference-mode", "set-num-threads", "compile-dynamic"} <= set(CATALOGUE_FIX_NAMES)


def test_a_forward_that_autograd_records_with_no_backward_is_offered_inference_mode() -> None:
    opp = _opportunity(FakeRun(_linears(grad=True).frame(), _manifest()), "inference-mode")
    assert opp is not None
    assert opp["evidence"]["graph_nodes_per_step"] == 16
    assert opp["ranked_by"] == "predicted_speedup"
    assert "torch.inference_mode()" in opp["hint"]
    assert opp["predicted_interval"]["low"] <= opp["predicted_speedup"] \
        <= opp["predicted_interval"]["high"]


@pytest.mark.parametrize("grad, backward", [(False, False), (True, True)])
def test_no_grad_or_a_backward_in_the_step_is_not_offered_inference_mode(
        grad: bool, backward: bool) -> None:
    run = FakeRun(_linears(grad=grad, backward=backward).frame(), _manifest())
    assert _opportunity(run, "inference-mode") is None


def test_the_h100_inference_grad_recording_predicts_its_measured_gain_within_its_interval():
    """The entry's development case (the node cost was read from it): the prediction's own
    interval holds the gain measured by hand there."""
    truth = json.loads((H100 / "catalogue_truth.json").read_text())
    entry = truth.get("cases", truth)["inference_grad"]
    run = committed.run(H100 / entry["record"]["run"])
    opp = _opportunity(run, "inference-mode")
    assert opp is not None
    assert _within(opp, float(entry["measured_speedup"]))


def test_no_other_h100_catalogue_program_is_offered_inference_mode() -> None:
    """A training step (its backward) and a forward on tensors that need no grad (one
    sequence number, no node) do not fire."""
    for name in ("adam_foreach_false", "fp32_matmul", "grad_scaler", "row_loop"):
        folder = next((H100 / "runs" / name).iterdir())
        assert _opportunity(committed.run(folder), "inference-mode") is None, name


def _seed_steps(step_us: list[float]) -> Trace:
    t = Trace()
    ts = 1000.0
    for n, span in enumerate(step_us):
        t.step(n, ts, span)
        t.cpu("seed", ts + 1.0, span - 2.0, cat="user_annotation")
        body = span - 10.0
        t.cpu("aten::matmul", ts + 2.0, body * 0.9 + 2.0)
        t.cpu("aten::mm", ts + 3.0, body * 0.9, dims=[[64, 64], [64, 64]])
        t.cpu("aten::add", ts + body * 0.9 + 5.0, 2.0)
        ts += span + 5.0
    return t


def test_steps_that_wait_for_cores_are_offered_set_num_threads_ranked_first() -> None:
    spans = [7740.0, 7960.0, 100.0]
    run = FakeRun(_seed_steps(spans).frame(), _manifest(intra_op_threads=2, cpus=2))
    opps = Analysis(run).opportunities
    assert opps[0]["fix"] == "set-num-threads"
    # the fastest called step is the attainable one: the mean step over it
    assert opps[0]["predicted_speedup"] == pytest.approx(sum(spans) / 3 / min(spans), rel=0.01)
    assert "torch.set_num_threads(1)" in opps[0]["hint"]


def test_one_thread_already_gets_no_set_num_threads_and_a_hint_that_says_so() -> None:
    run = FakeRun(_seed_steps([7740.0, 7960.0, 100.0]).frame(),
                  _manifest(intra_op_threads=1, cpus=2))
    assert _opportunity(run, "set-num-threads") is None
    hint = ids(run)["threads"].hint
    assert "already runs one intra-op thread" in hint
    assert "set_num_threads(1)" not in hint


def test_steady_steps_are_not_offered_set_num_threads() -> None:
    run = FakeRun(_seed_steps([100.0, 104.0, 98.0]).frame(), _manifest(intra_op_threads=2))
    assert _opportunity(run, "set-num-threads") is None


def _compiled(regions: list[str], warmup_ms: list[float]) -> FakeRun:
    t = Trace()
    ts = 1000.0
    for n, region in enumerate(regions):
        t.step(n, ts, 1200.0)
        t.cpu("fn", ts + 1.0, 1190.0, cat="user_annotation")
        t.cpu("TorchDynamo Cache Lookup", ts + 2.0, 80.0)
        t.cpu(region, ts + 90.0, 1000.0)
        t.cpu("aten::addmm", ts + 100.0, 900.0)
        ts += 1300.0
    return FakeRun(t.frame(), _manifest(warmup_call_ms=warmup_ms, wait_call_ms=[1400.0]))


def test_graphs_past_a_frames_first_and_slow_warm_up_calls_are_offered_compile_dynamic():
    run = _compiled([f"Torch-Compiled Region: 0/{i}" for i in range(3)],
                    [2500.0, 900.0, 1000.0])
    opps = Analysis(run).opportunities
    opp = next(o for o in opps if o.get("fix") == "compile-dynamic")
    assert opp["evidence"]["graphs_per_frame_max"] == 3
    assert opp["evidence"]["slow_calls"] == 3  # two warm-up calls and the wait call
    assert "dynamic=True" in opp["hint"] and "mark_dynamic" in opp["hint"]
    # an already-compiled function is not told to compile
    assert not any("torch.compile to" in str(o.get("hint")) or
                   "(torch.compile)" in str(o.get("hint")) for o in opps)


def test_one_graph_and_fast_warm_up_calls_are_not_offered_compile_dynamic() -> None:
    run = _compiled(["Torch-Compiled Region: 0/0"] * 3, [2500.0, 1.3, 1.2])
    run = FakeRun(run.events, _manifest(warmup_call_ms=[2500.0, 1.3, 1.2],
                                        wait_call_ms=[1.25]))
    assert _opportunity(run, "compile-dynamic") is None


def test_the_recorded_recompiles_predict_the_gain_measured_by_hand_within_the_interval():
    """The development program of cpu_heldout.py (`compile_recompiles`, its DYNAMIC_COMPILE_
    RATIO read from it): recorded on the 2-core machine, its fix timed there by hand."""
    measured = json.loads(CPU_TRUTH.read_text())["cases"]["compile_recompiles"]["fixes"][
        "dynamic"]["speedup"]
    opp = _opportunity(committed.run(DATA / "cpu_catalogue" / "compile_recompiles"),
                       "compile-dynamic")
    assert opp is not None
    assert _within(opp, float(measured))


def test_a_compiled_runs_cuda_graph_hint_names_the_compiles_mode_not_torch_compile() -> None:
    from autoprof.analysis.diagnose.predictions import FIX_HINTS, for_compiled

    opp = {"cause": "host_launch", "fix": "cuda-graph",
           "hint": f"{FIX_HINTS['cuda-graph']} (vectorise the Python loop first)"}
    out = for_compiled([opp, {"cause": "host_sync", "fix": "remove-sync", "hint": "x"}])
    assert "torch.compile(mode=" not in out[0]["hint"]
    assert "mode='reduce-overhead'" in out[0]["hint"]
    assert out[0]["hint"].endswith("(vectorise the Python loop first)")
    assert out[1]["hint"] == "x"
