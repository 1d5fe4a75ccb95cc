"""The seven buckets on traces whose answer is known by construction (docs/analysis.md,
"breakdown", states each rule tested here)."""

from __future__ import annotations

import pytest
from support.attrbuild import FakeRun, Trace

from autoprof.analysis.analysis import Analysis
from autoprof.analysis.kinds import BUCKETS
from autoprof.analysis.metrics.breakdown import breakdown


def buckets(trace: Trace, call_region: str | None = None, step: int = 0) -> dict[str, float]:
    steps = breakdown(trace.frame(), call_region).steps.set_index("step")
    row = steps.loc[step]
    out = {b: float(row[f"{b}_us"]) for b in BUCKETS}
    assert sum(out.values()) == pytest.approx(float(row["step_us"]), abs=1e-6)
    out["step_us"] = float(row["step_us"])
    out["autoprof_us"] = float(row["autoprof_us"])
    return out


def expect(got: dict[str, float], **want: float) -> None:
    """Every bucket named in `want` has that value; every other bucket is 0."""
    for b in BUCKETS:
        assert got[b] == pytest.approx(want.get(b, 0.0), abs=1e-6), b


def test_a_sleep_between_ops_is_host_untraced():
    t = Trace().step(0, 0, 1100)
    t.cpu("aten::mm", 10, 20).launch(15, 10, 26, 10)
    # 30..1040: time.sleep(0.001), nothing traced
    t.cpu("aten::add", 1040, 20).launch(1045, 10, 1056, 4)
    got = buckets(t)
    expect(got, gpu_compute=14, host_launch=16 + 16, host_untraced=10 + 1004 + 40)
    assert got["step_us"] == 1100


def test_item_after_a_long_kernel_is_host_sync_and_its_drain():
    t = Trace().step(0, 0, 600)
    t.cpu("aten::mm", 10, 20).launch(15, 5, 25, 500)
    t.item(40, 500)  # waits for the kernel (ends 525), returns at 540
    # GPU busy 25..525 -> compute; the wait after it 525..540, then the drained GPU until the
    # step ends (no more GPU work) -> host_sync
    expect(buckets(t), gpu_compute=500, host_launch=15, host_sync=15 + 60, host_untraced=10)


def test_cpu_tensor_item_is_not_a_sync():
    t = Trace().step(0, 0, 600)
    t.cpu("aten::mm", 10, 20).launch(15, 5, 25, 500)
    t.item(40, 500, on_device=False)  # no runtime call inside: reads host memory
    expect(buckets(t), gpu_compute=500, host_launch=15, host_cpu_work=15,
           host_untraced=10 + 60)
    run = FakeRun(t.frame())
    assert "host-sync" not in {d.id for d in Analysis(run).diagnostics}


def test_device_item_fires_host_sync_and_names_its_region():
    t = Trace().step(0, 0, 600).region("log_grad_norms", 35, 510)
    t.cpu("aten::mm", 10, 20).launch(15, 5, 25, 500)
    t.item(40, 500)
    ctx = Analysis(FakeRun(t.frame()))
    diag = {d.id: d for d in ctx.diagnostics}["host-sync"]
    assert diag.evidence["host_sync_us_per_step"] == pytest.approx(75)
    sync = next(o for o in ctx.opportunities if o["cause"] == "host_sync")
    assert sync["where"][0]["name"] == "aten::item in log_grad_norms"
    assert sync["where"][0]["us_per_step"] == pytest.approx(75)


def test_drain_runs_until_the_next_gpu_work_whatever_the_host_does():
    t = Trace().step(0, 0, 300)
    t.cpu("aten::mm", 0, 20).launch(5, 10, 16, 10)
    t.item(30, 20)  # returns at 50; Python 50..100; the next op 100..120 launches at 116
    t.cpu("aten::add", 100, 20).launch(105, 10, 116, 10)
    expect(buckets(t), gpu_compute=20, host_launch=16, host_sync=20 + 66,
           host_untraced=4 + 174)


def test_overlapped_nccl_is_compute_exposed_nccl_is_communication():
    t = Trace().step(0, 0, 200)
    t.launch(10, 5, 20, 100)  # compute kernel 20..120
    t.launch(16, 3, 50, 130, kernel="ncclDevKernel_AllReduce_Sum_f32_RING_LL", stream=20)
    expect(buckets(t), gpu_compute=100, gpu_communication=60, host_launch=5 + 3,
           host_untraced=10 + 1 + 1 + 20)


def test_copies_alone_are_gpu_memory():
    t = Trace().step(0, 0, 100)
    t.launch(10, 5, 20, 40, kernel="Memcpy HtoD (Pageable -> Device)", gpu_cat="gpu_memcpy",
             api="cudaMemcpyAsync")
    t.launch(16, 3, 60, 20)
    expect(buckets(t), gpu_memory=40, gpu_compute=20, host_launch=5 + 3,
           host_untraced=10 + 1 + 1 + 20)


def test_a_region_that_launches_nothing_is_host_cpu_work():
    t = Trace().step(0, 0, 150).region("load_batch", 10, 100)
    t.cpu("aten::empty", 20, 10)
    t.cpu("aten::mm", 110, 20).launch(115, 10, 126, 10)
    expect(buckets(t), host_cpu_work=100, host_launch=16, gpu_compute=10, host_untraced=24)


def test_a_region_that_launches_is_transparent():
    t = Trace().step(0, 0, 150).region("forward", 5, 140)
    t.cpu("aten::mm", 110, 20).launch(115, 10, 126, 10)
    expect(buckets(t), host_launch=16, gpu_compute=10, host_untraced=124)


def test_autoprof_label_and_time_outside_the_call_region_leave_the_step():
    t = Trace().step(0, 0, 300)
    t.region("autoprof::sync", 0, 100).cpu("cudaDeviceSynchronize", 10, 80, "cuda_runtime")
    t.region("fn", 100, 180)
    t.cpu("aten::mm", 110, 20).launch(115, 10, 126, 10)
    got = buckets(t, call_region="fn")
    expect(got, host_launch=16, gpu_compute=10, host_untraced=10 + 144)
    assert got["step_us"] == 180 and got["autoprof_us"] == 100 + 20
    # without the call region only the autoprof:: label leaves; its sync is never host_sync
    got = buckets(t)
    expect(got, host_launch=16, gpu_compute=10, host_untraced=10 + 164)
    assert got["autoprof_us"] == 100


def test_a_gpu_tail_is_counted_once():
    t = Trace().step(0, 0, 100).step(1, 100, 100)
    t.cpu("aten::mm", 35, 15).launch(40, 5, 50, 200)  # runs to 250, into step 1's CPU time
    t.cpu("aten::mm", 110, 20).launch(115, 5, 250, 10)
    expect(buckets(t, step=0), gpu_compute=200, host_launch=15, host_untraced=35)
    got = buckets(t, step=1)
    expect(got, gpu_compute=10)  # step 1 starts where step 0's window ends (250)
    assert got["step_us"] == 10


def test_another_threads_launch_counts():
    t = Trace().step(0, 0, 200)
    t.cpu("autograd::engine::evaluate_function: MmBackward0", 50, 30, tid=2)
    t.launch(60, 10, 71, 10, tid=2)
    expect(buckets(t), host_launch=21, gpu_compute=10, host_untraced=50 + 119)


def test_cpu_only_step():
    t = Trace().step(0, 0, 100).cpu("aten::select", 10, 30)
    expect(buckets(t), host_cpu_work=30, host_untraced=70)
    assert Analysis(FakeRun(t.frame())).verdict.kind == "cpu-only"


def test_no_steps_is_one_step_over_the_trace():
    t = Trace().cpu("aten::mm", 10, 20).launch(15, 10, 26, 10)
    got = buckets(t, step=-1)
    assert got["step_us"] == pytest.approx(26)  # 10 .. 36
    expect(got, host_launch=16, gpu_compute=10)


def test_where_sums_to_the_bucket_and_names_regions():
    t = Trace().step(0, 0, 300).region("fn", 0, 300)
    t.cpu("aten::mm", 10, 20).launch(15, 10, 26, 10)
    t.cpu("aten::add", 100, 20).launch(105, 10, 121, 4)
    bd = breakdown(t.frame(), "fn")
    where = bd.where.groupby("bucket")["us"].sum()
    for bucket in ("host_launch", "host_untraced"):
        assert where[bucket] == pytest.approx(float(bd.steps[f"{bucket}_us"].sum()))
    names = set(bd.where["name"])
    assert {"aten::mm", "aten::add", "between ops in fn"} <= names
