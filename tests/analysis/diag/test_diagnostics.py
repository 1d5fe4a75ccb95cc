"""Each diagnostic fires on a scenario that has the problem and stays silent on one without."""

from __future__ import annotations

import pytest
from support.diagbuild import FakeRun, Trace, ids, matmul_like

from autoprof.analysis.analysis import diagnose
from autoprof.analysis.diagnose.registry import checks


def compute_bound(steps: int = 4, first_step_us: float | None = None) -> Trace:
    """Big kernels queued back to back: the GPU is always busy."""
    return matmul_like(steps=steps, cpu_step_us=100.0, kernel_us=400.0, launch_us=8.0,
                       first_step_us=first_step_us)


def with_item_per_step(steps: int = 3) -> Trace:
    t = Trace()
    for i in range(steps):
        ts = i * 1000.0
        t.step(i, ts, 900.0)
        t.cpu("aten::mm", ts + 10, 20.0)
        t.launch(ts + 12, 8.0, ts + 21, 600.0)
        t.cpu("aten::item", ts + 40, 600.0)  # waits for the kernel
        t.cpu("aten::_local_scalar_dense", ts + 41, 598.0)
        t.cpu("cudaStreamSynchronize", ts + 50, 580.0, cat="cuda_runtime")
    return t


def idle_middle(steps: int = 3) -> Trace:
    """Per step: a long kernel, then 400 us of CPU work with the GPU idle, then another."""
    t = Trace()
    for i in range(steps):
        ts = i * 1200.0
        t.step(i, ts, 1100.0)
        t.launch(ts + 5, 5.0, ts + 11, 300.0)
        t.cpu("data_loading", ts + 20, 700.0, cat="user_annotation")
        t.launch(ts + 730, 5.0, ts + 736, 300.0)
    return t


CASES = [
    # id, run that has the problem, run that does not
    ("overhead-bound", lambda: FakeRun(matmul_like(kernel_us=2.0).frame()),
     lambda: FakeRun(compute_bound().frame())),
    ("cold-start", lambda: FakeRun(matmul_like(first_step_us=300.0).frame()),
     lambda: FakeRun(matmul_like().frame())),
    ("host-sync", lambda: FakeRun(with_item_per_step().frame()),
     lambda: FakeRun(compute_bound().frame())),
    ("gpu-idle", lambda: FakeRun(idle_middle().frame()),
     lambda: FakeRun(compute_bound().frame())),
    ("launch-latency", lambda: FakeRun(compute_bound().frame()),
     lambda: FakeRun(matmul_like().frame())),
    ("short-kernels", lambda: FakeRun(matmul_like(kernel_us=2.0).frame()),
     lambda: FakeRun(compute_bound().frame())),
    ("no-profiler-warmup",
     lambda: FakeRun(matmul_like().frame(), {"options": {"schedule": {"wait": 0, "warmup": 0,
                                                                      "active": 3}}}),
     lambda: FakeRun(matmul_like().frame(), {"options": {"schedule": {"wait": 1, "warmup": 1,
                                                                      "active": 3}}})),
]


@pytest.mark.parametrize(("check_id", "bad", "good"), CASES, ids=[c[0] for c in CASES])
def test_fires_on_problem_and_silent_without(check_id, bad, good):
    found = ids(bad())
    assert check_id in found, f"{check_id} did not fire; found {sorted(found)}"
    d = found[check_id]
    assert d.message and d.hint and d.evidence
    assert d.severity in ("info", "warning", "critical")
    assert check_id not in ids(good())


def test_every_required_id_has_a_check_with_a_precondition():
    required = {"overhead-bound", "cold-start", "host-sync", "gpu-idle", "launch-latency",
                "short-kernels", "no-profiler-warmup", "straggler"}
    registered = {c.id: c for c in checks()}
    assert required <= set(registered)
    assert all(c.needs for c in registered.values())


def test_cold_start_says_how_much():
    d = ids(FakeRun(matmul_like(first_step_us=300.0).frame()))["cold-start"]
    assert d.severity == "warning"
    assert d.evidence["step_ratio"] == pytest.approx(3.0)
    assert "3.0x" in d.message


def test_cold_start_from_warmup_calls_only_is_info():
    run = FakeRun(matmul_like().frame(), {"warmup_call_ms": [850.0, 2.0, 2.1, 1.9]})
    d = ids(run)["cold-start"]
    assert d.severity == "info"
    assert d.evidence["warmup_ratio"] == pytest.approx(425.0)
    assert "first warm-up call took 850.000 ms" in d.message


def test_host_sync_is_critical_when_it_dominates_steps():
    d = ids(FakeRun(with_item_per_step().frame()))["host-sync"]
    assert d.severity == "critical"  # 600 of 900 us per step
    assert d.evidence["host_syncs_in_steps"] == 3
    assert d.evidence["by_name"] == {"aten::item": 3}
    assert ".item()" in d.hint


def test_launch_latency_info_when_queue_is_full_and_warning_when_dispatch_is_slow():
    d = ids(FakeRun(compute_bound().frame()))["launch-latency"]
    assert d.severity == "info"
    slow = Trace().step(0, 0.0, 1000.0)
    for i in range(4):  # GPU idle, yet each kernel starts 50 us after its launch returns
        slow.launch(10.0 + 200 * i, 5.0, 65.0 + 200 * i, 100.0)
    d = ids(FakeRun(slow.frame()))["launch-latency"]
    assert d.severity == "warning"
    assert d.evidence["dispatch_latency_us_p50"] == pytest.approx(50.0)


def test_gpu_idle_names_the_step_and_gap():
    d = ids(FakeRun(idle_middle().frame()))["gpu-idle"]
    assert d.evidence["idle_gap_max_us"] == pytest.approx(425.0)
    assert "ProfilerStep#" in d.message


def test_cpu_only_run_has_no_gpu_findings():
    t = Trace()
    for i in range(3):
        t.step(i, i * 100.0, 90.0).cpu("aten::add", i * 100.0 + 5, 50.0)
    found = ids(FakeRun(t.frame()))
    assert not {"overhead-bound", "gpu-idle", "launch-latency", "short-kernels"} & set(found)


def test_findings_sorted_by_severity():
    run = FakeRun(with_item_per_step().frame(), {"warmup_call_ms": [850.0, 2.0, 2.1]})
    order = {"critical": 0, "warning": 1, "info": 2}
    sev = [order[d.severity] for d in diagnose(run)]
    assert sev == sorted(sev) and len(sev) >= 2
