"""The CPU findings on hand-built runs whose cause is known: steps that vary because threads
wait for cores, a real cold start, a torch.compile'd function, a transformer-like step of many
short ops beside a few heavy ones, and the bounds of a CPU-only step."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from support.diagbuild import FakeRun, Trace, ids

from autoprof.analysis.analysis import Analysis

MM_DIMS = [[64, 64], [64, 64]]


def _manifest(**extra: Any) -> dict[str, Any]:
    return {"name": "seed", "options": {"warmup": 3, "schedule": {"wait": 1, "warmup": 1,
                                                                  "active": 3}},
            "warmup_call_ms": [0.1, 0.1, 0.1], "wait_call_ms": [0.1], **extra}


def _seed_steps(step_us: list[float], first_extra_us: float = 0.0) -> Trace:
    """``x @ w + b`` steps: the call region, aten::matmul > aten::mm (most of the step),
    aten::add; ``first_extra_us`` of aten::uniform_ in the first step only (a lazy module
    filling its weights)."""
    t = Trace()
    ts = 1000.0
    for n, span in enumerate(step_us):
        t.step(n, ts, span)
        t.cpu("seed", ts + 1.0, span - 2.0, cat="user_annotation")
        at = ts + 2.0
        if n == 0 and first_extra_us:
            t.cpu("aten::uniform_", at, first_extra_us)
            at += first_extra_us + 1.0
        body = span - (at - ts) - 8.0
        t.cpu("aten::matmul", at, body * 0.9 + 2.0)
        t.cpu("aten::mm", at + 1.0, body * 0.9, dims=MM_DIMS)
        t.cpu("aten::add", at + body * 0.9 + 3.0, 2.0)
        ts += span + 5.0
    return t


def _typed(trace: Trace) -> pd.DataFrame:
    """The events table with float32 input types on the rows that have shapes (the builder
    leaves ``input_types`` out; FLOPs from shapes need the dtype)."""
    frame = trace.frame()
    types = ['["float", "float"]' if d else "" for d in frame["input_dims"].astype(str)]
    frame["input_types"] = pd.Categorical(types)
    return frame


def test_steps_of_7_7_8_0_and_0_1_ms_are_threads_not_a_cold_start():
    run = FakeRun(_seed_steps([7740.0, 7960.0, 100.0]).frame(), _manifest())
    found = ids(run)
    assert "cold-start" not in found
    d = found["threads"]
    assert d.evidence["step_spread"] == pytest.approx(79.6)
    assert d.evidence["step_spread_fired"] is True
    assert d.evidence["same_ops_per_step"] is True
    assert "torch.set_num_threads" in d.hint
    assert "more threads" not in d.hint  # the old CPU hint told this user to add threads


def test_the_thread_and_core_counts_are_named_when_the_manifest_has_them():
    run = FakeRun(_seed_steps([7740.0, 7960.0, 100.0]).frame(),
                  _manifest(intra_op_threads=2, cpus=2))
    d = ids(run)["threads"]
    assert "2 intra-op threads on 2 CPUs" in d.message
    assert d.evidence["intra_op_threads"] == 2


def test_a_gpt2_block_slowing_down_334_218_97_ms_is_not_a_cold_start():
    run = FakeRun(_seed_steps([334e3, 218e3, 97e3]).frame(), _manifest())
    found = ids(run)
    assert "cold-start" not in found
    assert found["threads"].evidence["step_spread"] == pytest.approx(334 / 97, rel=1e-3)


def test_a_64x64_product_taking_milliseconds_is_threads_even_when_steps_agree():
    # every product 0.52 MFLOP in ~20 ms: 0.03 GFLOP/s, a hundred times below a core
    d = ids(FakeRun(_typed(_seed_steps([21e3, 22e3, 20e3])), _manifest()))["threads"]
    assert d.evidence["step_spread_fired"] is False
    assert d.evidence["matrix_gflops_fired"] is True
    assert d.evidence["matrix_gflops"] < 0.05


def test_steady_fast_steps_get_no_threads_finding():
    # 0.52 MFLOP in ~50 us: 10 GFLOP/s, steps within 4%
    assert "threads" not in ids(FakeRun(_typed(_seed_steps([60.0, 62.0, 61.0])), _manifest()))


def test_a_first_step_doing_one_time_work_is_a_cold_start():
    run = FakeRun(_seed_steps([4000.0, 1000.0, 1000.0], first_extra_us=2900.0).frame(),
                  _manifest())
    found = ids(run)
    d = found["cold-start"]
    assert d.severity == "warning" and d.evidence["step_slow"] is True
    assert list(d.evidence["one_time_ops"]) == ["aten::uniform_"]
    assert "aten::uniform_" in d.message
    assert "threads" not in found  # the first step did other work: not the same ops


def test_a_slower_first_step_of_the_same_ops_after_warm_up_is_not_a_cold_start():
    run = FakeRun(_seed_steps([2000.0, 1000.0, 1000.0]).frame(), _manifest())
    assert "cold-start" not in ids(run)


def test_a_first_step_with_no_warm_up_before_it_and_steady_later_steps_is_a_cold_start():
    manifest = _manifest(warmup_call_ms=[], wait_call_ms=[],
                         options={"warmup": 0, "schedule": {"wait": 0, "warmup": 0,
                                                            "active": 3}})
    run = FakeRun(_seed_steps([2000.0, 1000.0, 1010.0]).frame(), manifest)
    assert ids(run)["cold-start"].evidence["step_slow"] is True


def test_a_torch_compile_first_call_is_named_as_compilation():
    t = _seed_steps([300.0, 300.0, 300.0])
    for n in range(3):
        t.cpu("Torch-Compiled Region: 0/0", 1000.0 + n * 305.0 + 3.0, 1.0)
    run = FakeRun(t.frame(), _manifest(warmup_call_ms=[25945.7, 0.3, 0.3]))
    d = ids(run)["cold-start"]
    assert d.evidence["compiled"] is True and d.evidence["warmup_slow"] is True
    assert "compiling" in d.message and "25945" not in d.message
    assert "torch.compile" in d.hint and "recompiles" in d.hint


def test_many_short_ops_beside_a_heavy_product_are_not_dispatch_bound():
    # 500 ops of 10 us and one 60 ms product a step: the short ops hold 7% of it
    t = Trace()
    for n in range(3):
        s = n * 70_000.0
        t.step(n, s, 66_000.0)
        for i in range(500):
            t.cpu("aten::add_", s + i * 11.0, 10.0)
        t.cpu("aten::mm", s + 5600.0, 60_000.0, dims=[[512, 512], [512, 512]])
    found = ids(FakeRun(t.frame()))
    assert "cpu-dispatch-bound" not in found


def test_a_cpu_only_step_is_bounded_by_its_heavy_ops_not_by_removing_all_host_work():
    t = Trace()
    for n in range(3):  # aten::mm 34% of a 10 ms step, aten::gelu 50%, Python between
        s = n * 10_000.0
        t.step(n, s, 10_000.0)
        t.cpu("aten::mm", s + 100.0, 3400.0, dims=[[256, 256], [256, 256]])
        t.cpu("aten::gelu", s + 3600.0, 5000.0)
    ops = Analysis(FakeRun(t.frame())).opportunities
    assert "host_cpu_work" not in [o["cause"] for o in ops]
    mm = next(o for o in ops if o["where"][0]["name"] == "aten::mm")
    assert mm["cause"] == "cpu_op"
    assert mm["pct_of_step"] == pytest.approx(34.0)
    assert mm["max_speedup"] == pytest.approx(1 / (1 - 0.34))
    assert "aten::mm holds 34% of the step" in mm["hint"] and "1.52x" in mm["hint"]
    assert all("more threads" not in o["hint"] for o in ops)


def test_an_op_that_is_the_whole_step_gets_no_absurd_bound():
    t = Trace()
    for n in range(3):
        t.step(n, n * 10_000.0, 10_000.0).cpu("aten::mm", n * 10_000.0 + 10.0, 9_980.0)
    ops = Analysis(FakeRun(t.frame())).opportunities
    assert ops[0]["cause"] == "cpu_op" and ops[0]["max_speedup"] is None


def test_a_compiled_function_s_short_first_call_is_not_called_compilation():
    # 0.62 ms against 0.27 ms: a cache hit, not a compile (the H200 what-if compile run)
    t = _seed_steps([300.0, 300.0, 300.0])
    t.cpu("Torch-Compiled Region: 0/0", 1003.0, 1.0)
    d = ids(FakeRun(t.frame(), _manifest(warmup_call_ms=[0.617, 0.27, 0.272])))["cold-start"]
    assert d.evidence["compiled"] is False
    assert "compiling" not in d.message and "recompiles" not in d.hint

