"""The loop around the function: a step holds the caller's loop (the user's, bucketed like
the call), the call, and autoprof's tail; GPU work launched before a step never counts in it.
Hand-built traces whose answer is known by construction, then real recordings."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from support.attrbuild import Ev, FakeRun, Trace
from support.store import committed

import autoprof
from autoprof.analysis.analysis import Analysis
from autoprof.analysis.diagnose.opportunities import opportunities
from autoprof.analysis.kinds import BUCKETS
from autoprof.analysis.metrics.breakdown import breakdown

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
TRUTH = Path(__file__).resolve().parents[2] / "data" / "gpu_h200_truth"
GPU_DATA = Path(__file__).resolve().parents[2] / "data"


def loop_step(t: Trace, n: int, at: float, loader_us: float = 600.0) -> Trace:
    """One iteration of `for batch in loader: fn(batch)` as autoprof records it: the step
    opens, the loader runs (20 us in), untraced Python, the call (a launch), autoprof's tail."""
    call_at = at + 20 + loader_us + 80
    t.step(n, at, call_at + 300 - at)
    t.region(LOADER, at + 20, loader_us)
    t.region("fn", call_at, 260)
    t.cpu("aten::mm", call_at + 10, 20).launch(call_at + 15, 10, call_at + 26, 10)
    return t


def fake(t: Trace, **manifest: object) -> FakeRun:
    return FakeRun(t.frame(), manifest={"name": "fn", **manifest}, name="fn")


def test_the_callers_loop_is_the_users_and_the_tail_is_autoprofs():
    t = loop_step(Trace(), 0, 0.0)
    bd = breakdown(t.frame(), "fn")
    row = bd.steps.iloc[0]
    # 0-20 untraced, the loader 600 of host_cpu_work, 80 untraced: 700 between calls; the
    # call 700-960; the tail 960-1000 (40) is autoprof's, out of the step
    assert row["autoprof_us"] == pytest.approx(40)
    assert row["step_us"] == pytest.approx(960)
    assert row["between_calls_us"] == pytest.approx(700)
    assert row["host_cpu_work_us"] == pytest.approx(600)
    assert row["host_untraced_us"] == pytest.approx(100 + 260 - 16 - 10)
    assert sum(row[f"{b}_us"] for b in BUCKETS) == pytest.approx(row["step_us"])
    between = bd.between.iloc[0]
    assert between["host_cpu_work_us"] == pytest.approx(600)
    assert between["host_untraced_us"] == pytest.approx(100)
    mean = bd.mean()
    assert mean["between_calls_us"] == pytest.approx(700)
    assert mean["between_calls_pct"] == pytest.approx(100 * 700 / 960)
    assert mean["between_calls_where"] == [
        {"name": "DataLoader.__next__", "us_per_step": pytest.approx(600)},
        {"name": "untraced", "us_per_step": pytest.approx(100)}]
    assert mean["per_step"][0]["between_calls_us"] == pytest.approx(700)


def test_without_a_call_region_nothing_is_between_calls():
    bd = breakdown(loop_step(Trace(), 0, 0.0).frame())
    assert np.isnan(bd.steps.iloc[0]["between_calls_us"])
    assert bd.steps.iloc[0]["autoprof_us"] == 0
    assert bd.mean()["between_calls_us"] is None


def test_a_loader_in_the_callers_loop_is_input_bound():
    t = Trace()
    for n in range(3):
        loop_step(t, n, 2000.0 * n)
    verdict = Analysis(fake(t)).verdict
    assert verdict.kind == "input-bound"
    assert verdict.reason == ("73% of each iteration passes between calls, in "
                              "DataLoader.__next__: the GPU waits for the next batch")
    assert verdict.evidence["between_calls_pct"]["median"] == pytest.approx(100 * 700 / 960)


def test_steps_on_both_sides_of_the_threshold_say_a_rerun_could_flip_it():
    t = Trace()
    loop_step(t, 0, 0.0, loader_us=100.0)  # 200 of 460 between calls: 43%
    loop_step(t, 1, 2000.0)
    loop_step(t, 2, 4000.0)
    verdict = Analysis(fake(t)).verdict
    assert verdict.kind == "input-bound"
    assert "(mixed across steps: 43-73% between calls; a rerun could give another verdict)" \
        in verdict.reason


def test_a_bare_loop_is_not_input_bound():
    """Half of a tiny step between calls is autoprof's own return and entry (untraced, 14-25
    us a step on a bare CPU loop): under INPUT_BOUND_MIN_US it is no verdict."""
    t = Trace().step(0, 0, 100).region("fn", 50, 40)
    t.cpu("aten::mm", 55, 20).launch(60, 10, 71, 5)
    bd = breakdown(t.frame(), "fn")
    assert bd.steps.iloc[0]["between_calls_us"] == pytest.approx(50)
    assert Analysis(fake(t)).verdict.kind == "overhead-bound"


def test_untraced_code_of_the_callers_loop_is_named_so():
    t = Trace()
    for n in range(3):  # 700 us of Python between calls, nothing traced
        at = 2000.0 * n
        t.step(n, at, 1000).region("fn", at + 700, 260)
        t.cpu("aten::mm", at + 710, 20).launch(at + 715, 10, at + 726, 10)
    verdict = Analysis(fake(t)).verdict
    assert verdict.kind == "input-bound"
    assert "in untraced code of the caller's loop: the GPU waits for the caller's loop" in \
        verdict.reason


def test_bucket_opportunities_count_only_the_time_inside_the_call():
    t = Trace()
    for n in range(3):
        loop_step(t, n, 2000.0 * n)
    bd = breakdown(t.frame(), "fn")
    opps = {o["cause"]: o for o in opportunities(bd)}
    # the loader's 600 us and the 100 us of untraced Python are the between-calls time, not
    # host_cpu_work or host_untraced of the call
    assert "host_cpu_work" not in opps
    assert opps["host_untraced"]["us_per_step"] == pytest.approx(260 - 16 - 10)
    assert opps["host_untraced"]["pct_of_step"] == pytest.approx(100 * 234 / 960)
    assert opps["host_untraced"]["max_speedup"] == pytest.approx(960 / (960 - 234))
    assert {w["name"] for w in opps["host_untraced"]["where"]} == {"between ops in fn"}


def test_a_sync_in_the_callers_loop_drains_up_to_the_call_only():
    t = Trace().step(0, 0, 1000)
    t.cpu("cudaDeviceSynchronize", 10, 20, "cuda_runtime")  # the caller's: 10-30
    t.region("fn", 100, 860)
    t.region(LOADER, 110, 600)  # a loader inside the call: host_cpu_work, not the drain
    t.cpu("aten::mm", 800, 20).launch(805, 10, 816, 10)
    bd = breakdown(t.frame(), "fn")
    row = bd.steps.iloc[0]
    assert row["host_sync_us"] == pytest.approx(20 + 70)  # the sync and its drain to 100
    assert row["host_cpu_work_us"] == pytest.approx(600)


def test_gpu_work_launched_before_the_step_never_counts_in_it():
    """The queue of an unrecorded step (no launch in the trace) runs into the first step: the
    step starts when it is done, and its gpu_compute is its own work's busy time."""
    t = Trace().step(2, 0, 1000).region("fn", 10, 950)
    t.events.append(Ev("earlier_kernel", "kernel", -50, 350, tid=7, stream=7))  # to 300
    t.cpu("aten::mm", 50, 20).launch(55, 10, 300, 100)
    t.step(3, 1000, 1000).region("fn", 1010, 950)
    t.cpu("aten::mm", 1050, 20).launch(1055, 10, 1066, 100)
    bd = breakdown(t.frame(), "fn").steps.set_index("step")
    assert bd.loc[2, "start_us"] == pytest.approx(300)
    assert bd.loc[2, "gpu_compute_us"] == pytest.approx(100)
    assert bd.loc[3, "gpu_compute_us"] == pytest.approx(100)


def test_the_profiler_overhead_compares_the_call_alone():
    t = Trace()
    for n in range(3):
        loop_step(t, n, 2000.0 * n)
    po = Analysis(fake(t, warmup_call_ms=[1.0, 0.2, 0.2])).profiler_overhead
    assert po["available"]
    assert po["profiled_step_us"] == pytest.approx(260)  # the call, not the 960 us iteration


# --- real runs ------------------------------------------------------------------------------

def truth_run(workload: str) -> autoprof.Run:
    truth = json.loads((TRUTH / "ground_truth.json").read_text())["workloads"][workload]
    return committed.run(TRUTH / truth["record"]["run"])


@pytest.mark.parametrize(("workload", "low", "high"), [
    ("mlp_loader_w0", 78.0, 84.0),  # profiler-free: 86% of the iteration between calls
    ("cnn_loader_w0_pin", 65.0, 70.0),  # profiler-free: 75%
])
def test_h200_loader_in_the_callers_loop_is_input_bound(workload, low, high):
    s = truth_run(workload).summary()
    assert s["verdict"] == "input-bound"
    assert s["verdict_reason"].startswith(
        f"{s['verdict_evidence']['between_calls_pct']['median']:.0f}% of each iteration passes "
        "between calls, in DataLoader.__next__: the GPU waits for the next batch")
    bd = s["breakdown"]
    assert low < bd["between_calls_pct"] < high
    assert bd["autoprof_us"] < 30  # the tail only: the loader is the user's
    assert bd["between_calls_where"][0]["name"] == "DataLoader.__next__"
    assert s["profiler_overhead"]["profiled_step_us"] < 0.4 * bd["step_us"]  # the call's


@pytest.mark.parametrize("workload", [
    "mlp_loader_inside", "mlp_loader_w4_pin", "cnn_loader_w4", "seed_64", "seed_4096",
    "sync_item", "sync_mask", "sync_nonzero", "sync_cpu", "sync_print", "gpt2_tiny",
    "gpt2_large", "compiled_mlp"])
def test_h200_runs_without_a_loader_in_the_loop_are_not_input_bound(workload):
    s = truth_run(workload).summary()
    assert s["verdict"] != "input-bound"
    assert s["breakdown"]["between_calls_pct"] < 35


def _all_gpu_runs() -> list[Path]:
    manifests = sorted(GPU_DATA.glob("gpu_h200*/**/manifest.json"))
    return [m.parent for m in manifests
            if "heldout" not in str(m) and "rank" not in m.name and
            any(m.parent.glob("*.pt.trace.json*"))]


@pytest.mark.slow
def test_gpu_compute_of_a_step_never_exceeds_its_own_busy_time():
    """On every committed H200 run: the GPU buckets of a step hold at most the busy time of
    the work launched in it (the first step of gpt2_large took in 16.5 ms of the unrecorded
    step before it)."""
    checked = 0
    for folder in _all_gpu_runs():
        run = committed.run(folder)
        if run.world_size > 1:
            continue
        bd = run.breakdown().set_index("step")
        busy = run.steps().set_index("step")["gpu_busy_us"]
        gpu = bd["gpu_compute_us"] + bd["gpu_memory_us"] + bd["gpu_communication_us"]
        both = busy.index.intersection(gpu.index)
        assert (gpu[both] <= busy[both] * 1.001 + 0.5).all(), folder
        checked += 1
    assert checked >= 20
    first = truth_run("gpt2_large").breakdown().iloc[0]
    assert first["gpu_compute_us"] < 58_000  # was 73.1 ms against 57.6 ms of busy time


def test_a_region_used_alone_gets_the_same_split(tmp_path):
    """`with autoprof.region(...)` in a loop whose other half sleeps: each step holds the
    sleep, named as the caller's untraced code, and the run is input-bound (CPU)."""
    import torch

    x = torch.ones(8)
    for _ in range(10):
        time.sleep(0.02)
        with autoprof.region("alone", warmup=3, out_dir=str(tmp_path),
                             schedule=dict(wait=0, warmup=1, active=4)):
            x.add(1)
    autoprof.flush()
    (run_dir,) = (tmp_path / "alone").iterdir()
    s = autoprof.load(run_dir).summary()
    assert s["verdict"] == "input-bound"
    assert "in untraced code of the caller's loop: the caller's loop, not the function, " \
        "takes most of each iteration" in s["verdict_reason"]
    assert s["breakdown"]["between_calls_pct"] > 80
    assert s["breakdown"]["autoprof_us"] < 500


def test_an_input_bound_run_gets_no_kernel_efficiency_finding():
    """The caller's loop decides the time, not the kernels (as for overhead-bound)."""
    from autoprof.analysis.diagnose.efficiency_checks import low_efficiency_diagnostic

    run = truth_run("mlp_loader_w0")
    assert run.analysis.verdict.kind == "input-bound"
    assert low_efficiency_diagnostic(run.analysis.efficiency, "mixed") is not None
    assert "low-efficiency" not in {d.id for d in run.analysis.diagnostics}


def test_the_profiler_note_speaks_of_the_call_alone():
    """The untraced calls time the call without its loop: the verdict they would give is the
    call's, not the iteration's (eff_gemm_bf16_2048: 64% of each iteration is its recorder's
    reading of the allocator between calls)."""
    (folder,) = (GPU_DATA / "gpu_h200" / "eff_gemm_bf16_2048").iterdir()
    analysis = committed.run(folder).analysis
    verdict, po = analysis.verdict, analysis.profiler_overhead
    assert verdict.kind == "input-bound"
    assert po["changes_verdict"] and po["verdict_without_profiler"] == "mixed"
    # the note is given only when the untraced calls' spread tells the profiler's share
    told = "and the call alone would be mixed" in verdict.reason
    assert told == (po["overhead_told"] is True), po


def test_the_text_and_markdown_say_how_much_passes_between_calls():
    from autoprof.analysis.report.markdown import render_markdown
    from autoprof.analysis.report.text import render_summary

    s = truth_run("mlp_loader_w0").report()
    text = " ".join(render_summary(s).split())
    assert "between calls (the caller's loop, GPU idle): 12.2 ms per step (80.4%), in " \
           "DataLoader.__next__ 12 ms" in text
    assert "autoprof's own 17.7 µs per step left out" in text
    assert "Between calls (the caller's loop, GPU idle): 12.2 ms per step (80.4 %), in " \
           "`DataLoader.__next__` 12 ms" in render_markdown(s)
    assert "**input-bound**" in render_markdown(s)


def test_a_sync_of_the_callers_loop_is_named_as_such():
    """The recorder of eff_gemm_bf16_8192 syncs the device between calls: the host-sync
    finding says where, not 'n/a' (no sync inside the call, so no host_sync opportunity)."""
    (folder,) = (GPU_DATA / "gpu_h200" / "eff_gemm_bf16_8192").iterdir()
    diag = {d.id: d for d in committed.run(folder).analysis.diagnostics}["host-sync"]
    assert "(between calls, in the caller's loop)" in diag.message
