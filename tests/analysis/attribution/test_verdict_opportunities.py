"""The verdict follows the breakdown; opportunities rank the non-compute buckets."""

from __future__ import annotations

import pytest
from support.attrbuild import FakeRun, Trace

from autoprof.analysis.analysis import Analysis
from autoprof.analysis.metrics.verdict import classify_sides
from autoprof.runfolder import Manifest


@pytest.mark.parametrize(("pct", "kind"), [
    ({"host_launch": 50.0, "host_untraced": 20.0, "gpu_compute": 30.0}, "overhead-bound"),
    ({"host_launch": 45.0, "host_untraced": 20.0, "gpu_compute": 35.0}, "mixed"),  # 65%
    ({"host_sync": 30.0, "gpu_compute": 65.0, "gpu_memory": 5.0}, "compute-bound"),
    ({"gpu_communication": 70.0, "gpu_compute": 20.0, "host_launch": 10.0},
     "communication-bound"),
    ({"gpu_communication": 30.0, "gpu_compute": 35.0, "host_launch": 35.0}, "mixed"),
    # the starved GPU of a training step: busy just over 15%, idle 84% -> host-bound
    ({"gpu_compute": 16.0, "host_launch": 50.0, "host_untraced": 34.0}, "overhead-bound"),
])
def test_the_side_holding_two_thirds_of_the_step_decides(pct, kind):
    assert classify_sides(pct, has_gpu=True) == kind


def test_no_gpu_work_is_cpu_only():
    assert classify_sides({"host_cpu_work": 100.0}, has_gpu=False) == "cpu-only"


def _sleepy() -> Analysis:
    t = Trace().step(0, 0, 1100).region("train_step", 0, 1100)
    t.cpu("aten::mm", 10, 20).launch(15, 10, 26, 10)
    t.cpu("aten::add", 1040, 20).launch(1045, 10, 1056, 4)
    return Analysis(FakeRun(t.frame()))


def test_opportunities_largest_first_with_speedup_and_where():
    ctx = _sleepy()
    ops = ctx.opportunities
    assert [o["cause"] for o in ops] == ["host_untraced", "host_launch"]
    first = ops[0]
    assert first["us_per_step"] == pytest.approx(1054)
    assert first["pct_of_step"] == pytest.approx(100 * 1054 / 1100)
    assert first["max_speedup"] == pytest.approx(1100 / (1100 - 1054))
    assert first["where"] == [{"name": "between ops in train_step",
                               "us_per_step": pytest.approx(1054)}]
    assert [w["name"] for w in ops[1]["where"]] == ["aten::mm", "aten::add"]
    assert all(o["hint"] for o in ops)
    assert ctx.verdict.kind == "overhead-bound"


def test_summary_carries_the_interfaces():
    from autoprof.analysis.report.summary import summarize
    from autoprof.analysis.report.text import render_summary

    report = summarize(FakeRun(_sleepy().events))
    s = report.to_dict()
    bd = s["breakdown"]
    assert set(bd["buckets_us"]) == set(bd["buckets_pct"]) == {
        "gpu_compute", "gpu_memory", "gpu_communication", "host_launch", "host_sync",
        "host_cpu_work", "host_untraced", "host_communication"}
    assert sum(bd["buckets_us"].values()) == pytest.approx(bd["step_us"], rel=0.01)
    assert s["opportunities"][0]["cause"] == "host_untraced"
    assert s["profiler_overhead"] == {"available": False,
                                      "reason": "no untraced calls in the manifest"}
    assert {"breakdown", "opportunities", "verdict"} <= set(s["ranks"][0])
    text = render_summary(report)
    verdict_at = text.index("VERDICT:")
    where_at = text.index("WHERE THE TIME GOES")
    assert verdict_at < where_at < text.index("EVIDENCE")
    assert "host_untraced: 1.05 ms per step" in text
    assert [st["step"] for st in bd["per_step"]] == [0]
    assert "r0 step 0 [" in text  # a bar per step


def test_profiler_overhead_from_the_untraced_calls():
    ctx = _sleepy()
    ctx.record = Manifest(name="", warmup_call_ms=(5.0, 0.5, 0.4), wait_call_ms=(0.6,))
    po = ctx.profiler_overhead
    assert po["untraced_call_us"] == pytest.approx(500)  # median of 500, 400, 600 (first dropped)
    assert po["profiled_step_us"] == pytest.approx(1100)
    assert po["overhead_pct"] == pytest.approx(100 * 600 / 1100)
    assert po["verdict_without_profiler"] == "overhead-bound"
    assert po["changes_verdict"] is False


def test_profiler_overhead_names_another_verdict_in_the_reason():
    # 100 us of GPU work in a 1 ms profiled step; untraced the call takes 110 us
    t = Trace().step(0, 0, 1000)
    t.cpu("aten::mm", 10, 20).launch(15, 10, 26, 100)
    ctx = Analysis(FakeRun(t.frame(), manifest={"warmup_call_ms": [0.2, 0.11, 0.11]}))
    assert ctx.profiler_overhead["verdict_without_profiler"] == "compute-bound"
    assert ctx.verdict.kind == "overhead-bound"
    assert "would be compute-bound" in ctx.verdict.reason


def _ids(trace: Trace) -> dict[str, object]:
    return {d.id: d for d in Analysis(FakeRun(trace.frame())).diagnostics}


def test_a_loop_of_tiny_cpu_ops_is_dispatch_bound():
    t = Trace()
    for step in range(3):  # 400 aten::select of 2 us, 3 us of Python between: 2 ms a step
        t.step(step, step * 2000.0, 2000.0)
        for i in range(400):
            t.cpu("aten::select", step * 2000.0 + i * 5.0, 2.0)
    diag = _ids(t)["cpu-dispatch-bound"]
    assert diag.evidence["ops_per_step"] == 400
    assert diag.evidence["most_frequent_op"] == "aten::select"
    assert diag.evidence["in_ops_pct"] == pytest.approx(40.0)
    assert diag.evidence["between_ops_pct"] == pytest.approx(60.0)


def test_dispatch_bound_needs_many_short_ops():
    def steps(ops: int, dur: float) -> Trace:
        t = Trace()
        for step in range(3):
            t.step(step, step * 2000.0, 2000.0)
            for i in range(ops):
                t.cpu("aten::mm", step * 2000.0 + i * (dur + 1.0), dur)
        return t

    assert "cpu-dispatch-bound" in _ids(steps(150, 12.0))  # many, under 20 us each
    assert "cpu-dispatch-bound" not in _ids(steps(60, 12.0))  # too few a step
    assert "cpu-dispatch-bound" not in _ids(steps(1, 1900.0))  # one long op a step


def test_a_data_loader_holding_the_step_is_named():
    t = Trace()
    for step in range(3):  # 55 ms of a 193 ms step in the loader's __next__
        s = step * 193_000.0
        t.step(step, s, 193_000.0)
        t.region("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", s + 1000,
                 55_000.0)
        t.cpu("aten::mm", s + 60_000, 100_000.0)
    diag = _ids(t)["data-loader"]
    assert diag.evidence["pct_of_step"] == pytest.approx(100 * 55 / 193, abs=0.1)
    assert "DataLoader" in diag.evidence["where"]


def test_untraced_calls_slower_than_a_step_never_change_the_verdict():
    """A GPU-bound step (1 ms of GPU work in a 1.25 ms step) whose untraced calls took 1.6 ms
    (still warming up): taking the profiler off cannot make the host side bigger."""
    t = Trace().step(0, 0, 1250)
    t.cpu("aten::mm", 10, 20).launch(15, 10, 26, 1000)
    ctx = Analysis(FakeRun(t.frame(), manifest={"warmup_call_ms": [50.0, 1.6, 1.6]}))
    po = ctx.profiler_overhead
    assert po["available"] is True and po["overhead_pct"] == 0.0
    assert po["verdict_without_profiler"] == po["verdict_with_profiler"]
    assert po["changes_verdict"] is False
    assert "would be" not in ctx.verdict.reason


def test_untraced_calls_doing_other_work_give_no_overhead():
    ctx = _sleepy()
    ctx.record = Manifest(name="", warmup_call_ms=(200.0, 200.0), wait_call_ms=(120.0,))
    po = ctx.profiler_overhead
    assert po["available"] is False and "not the same work" in po["reason"]
    assert ctx.verdict.reason.endswith("the GPU waits for the host")  # no note added


def test_cpu_only_hints_do_not_speak_of_a_gpu():
    t = Trace().step(0, 0, 100).cpu("aten::mm", 10, 60)
    ops = Analysis(FakeRun(t.frame())).opportunities
    assert [o["cause"] for o in ops] == ["cpu_op", "host_untraced"]  # the op, not all host work
    assert all("GPU" not in o["hint"] for o in ops)
