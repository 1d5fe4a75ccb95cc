"""The catalogue's entries whose fix deletes work the trace shows (diagnose/deleting.py):
cuDNN's layout transposes (conv_layout.py), gradients zeroed instead of dropped
(zero_grad.py), small tensors made on the host then copied (host_tensors.py). Each is found
on hand-built steps whose answer is known, stays silent without its evidence or under its
threshold, and states the wide interval of an entry without development pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.attrbuild import Trace
from support.store import committed

from autoprof.analysis.diagnose.code_fixes import code_fixes
from autoprof.analysis.diagnose.conv_layout import conv_layout
from autoprof.analysis.diagnose.ddp_no_sync import ddp_accumulation
from autoprof.analysis.diagnose.host_tensors import host_tensors
from autoprof.analysis.diagnose.predictions import predicted_interval
from autoprof.analysis.diagnose.zero_grad import zeroed_grads

CATALOGUE = Path(__file__).resolve().parents[2] / "data" / "gpu_h100_catalogue"
STEP_US = 1000.0
TO_NHWC = "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false>"
TO_NCHW = "void cudnn::engines_precompiled::nhwcToNchwKernel<float, float, float, true>"
CONV = "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc"
CONV_OPS = ("aten::conv2d", "aten::convolution", "aten::cudnn_convolution")


def _conv_trace(move_us: float = 150.0, ops: tuple[str, ...] = CONV_OPS) -> Trace:
    """Three 1000 us steps, each a conv2d (`ops`, outermost first) whose cuDNN op transposes
    its input (`move_us`), convolves (300 us) and transposes back (`move_us`), the host
    waiting at the end."""
    tr = Trace()
    for n in (1, 2, 3):
        t0 = STEP_US * (n - 1)
        (tr.step(n, t0, STEP_US)
         .cpu(ops[0], t0 + 5, 60)
         .cpu(ops[1], t0 + 6, 58)
         .cpu(ops[2], t0 + 7, 56)
         .launch(t0 + 10, 5, t0 + 20, move_us, kernel=TO_NHWC)
         .launch(t0 + 20, 5, t0 + 25 + move_us, 300.0, kernel=CONV)
         .launch(t0 + 30, 5, t0 + 30 + move_us + 300.0, move_us, kernel=TO_NCHW)
         .cpu("cudaDeviceSynchronize", t0 + 70, 2 * move_us + 300.0, "cuda_runtime"))
    return tr


def test_layout_transposes_around_convolutions_are_offered_channels_last() -> None:
    got = conv_layout(_conv_trace().frame(), 3, STEP_US, cudnn_benchmark=True)
    assert got is not None and got["fix"] == "channels-last"
    assert got["evidence"]["transposes_per_step"] == 2
    assert got["us_per_step"] == pytest.approx(300.0)
    assert got["where"][0]["name"] == "aten::conv2d"  # the op the user's line called
    assert "channels_last" in got["hint"] and "benchmark" not in got["hint"]  # on already
    # the GPU holds the step: 300 us of transposes go with their two 5 us launches, and no
    # more than that
    assert 1.2 < got["predicted_speedup"] <= STEP_US / (STEP_US - 300.0 - 10.0) * 1.001


@pytest.mark.parametrize("flag,says", [(False, "is off in this run"),
                                       (None, "this recording does not say")])
def test_cudnn_benchmark_is_named_only_where_not_known_to_be_on(flag: bool | None,
                                                                  says: str) -> None:
    got = conv_layout(_conv_trace().frame(), 3, STEP_US, cudnn_benchmark=flag)
    assert got is not None and "cudnn.benchmark = True" in got["hint"] and says in got["hint"]


@pytest.mark.parametrize("move_us,ops", [
    (10.0, CONV_OPS),  # 20 of 320 us of GPU time: under MIN_SHARE
    (150.0, ("aten::contiguous", "aten::clone", "aten::copy_")),  # not under a convolution
])
def test_no_layout_finding_without_its_evidence_or_under_its_share(
        move_us: float, ops: tuple[str, ...]) -> None:
    assert conv_layout(_conv_trace(move_us, ops).frame(), 3, STEP_US) is None


def _zero_trace(zero_op: str = "aten::zero_", n_params: int = 8, zero_us: float = 20.0) -> Trace:
    """Three 1000 us steps: `Optimizer.zero_grad#SGD.zero_grad` holding one `zero_op` (with a
    fill kernel) per parameter, then backward's AccumulateGrad adding into each gradient."""
    tr = Trace()
    for n in (1, 2, 3):
        t0 = STEP_US * (n - 1)
        tr.step(n, t0, STEP_US).region("Optimizer.zero_grad#SGD.zero_grad", t0 + 5,
                                       n_params * (zero_us + 2) + 5)
        for p in range(n_params):
            at = t0 + 7 + p * (zero_us + 2)
            tr.cpu(zero_op, at, zero_us).launch(at + 5, 5, at + 10, 2.0, kernel="fill_kernel")
        start = t0 + 300
        for p in range(n_params):
            at = start + p * 40
            (tr.cpu("torch::autograd::AccumulateGrad", at, 30)
             .cpu("aten::add_", at + 2, 25).launch(at + 5, 5, at + 12, 2.0, kernel="add_kernel"))
        tr.cpu("cudaDeviceSynchronize", t0 + 900, 20, "cuda_runtime")
    return tr


def test_zeroed_gradients_are_offered_set_to_none() -> None:
    got = zeroed_grads(_zero_trace().frame(), 3, STEP_US)
    assert got is not None and got["fix"] == "zero-grad-none"
    assert got["evidence"]["zero_ops_per_step"] == 8
    assert got["evidence"]["accumulate_adds_per_step"] == 8
    assert got["us_per_step"] == pytest.approx(8 * 20.0 + 8 * 25.0)
    assert "set_to_none=True" in got["hint"]
    assert got["where"][0]["name"] == "Optimizer.zero_grad#SGD.zero_grad"
    assert 1.1 < got["predicted_speedup"] <= got["max_speedup"] * 1.001


def test_a_foreach_zeroing_deletes_the_first_backward_passs_adds_only() -> None:
    """One `_foreach_zero_` over 8 gradients, then two micro-steps (a forward op that
    autograd records, then backward adding into each gradient): the first pass's 8 adds go
    with set_to_none, the second pass's stay (it adds into gradients set_to_none leaves
    too)."""
    n_params = 8
    tr = Trace()
    for n in (1, 2, 3):
        t0 = STEP_US * (n - 1)
        (tr.step(n, t0, STEP_US).region("Optimizer.zero_grad#AdamW.zero_grad", t0 + 5, 30)
         .cpu("aten::_foreach_zero_", t0 + 7, 25)
         .launch(t0 + 10, 5, t0 + 16, 4.0, kernel="zero_kernel"))
        for pass_start in (t0 + 60, t0 + 500):
            tr.cpu("aten::linear", pass_start, 20)
            for p in range(n_params):
                at = pass_start + 40 + p * 40
                (tr.cpu("torch::autograd::AccumulateGrad", at, 30)
                 .cpu("aten::add_", at + 2, 25)
                 .launch(at + 5, 5, at + 12, 2.0, kernel="add_kernel"))
        tr.cpu("cudaDeviceSynchronize", t0 + 900, 20, "cuda_runtime")
    ev = tr.frame()
    ev["seq_nr"] = [7 if name == "aten::linear" else -1 for name in ev["name"].astype(str)]
    got = zeroed_grads(ev, 3, STEP_US)
    assert got is not None and got["fix"] == "zero-grad-none"
    assert got["evidence"]["zero_ops_per_step"] == 1
    assert got["evidence"]["accumulate_adds_per_step"] == n_params
    assert got["us_per_step"] == pytest.approx(25.0 + n_params * 25.0)


@pytest.mark.parametrize("zero_op,n_params,zero_us", [
    ("aten::detach_", 8, 20.0),  # set_to_none=True: the region drops gradients, zeroes none
    ("aten::zero_", 1, 2.0),  # 27 us of a 1000 us step: under MIN_PCT
])
def test_no_zero_grad_finding_where_the_program_sets_none_or_it_is_small(
        zero_op: str, n_params: int, zero_us: float) -> None:
    assert zeroed_grads(_zero_trace(zero_op, n_params, zero_us).frame(), 3, STEP_US) is None


def _tensor_trace(maker: str = "aten::arange", wait_us: float = 60.0,
                  after: str | None = None) -> Trace:
    """Three 1000 us steps: `maker` on the host (then `after`, where given), then
    `.to('cuda')` copying it from pageable memory, the host waiting `wait_us` in the copy's
    stream sync, then a 400 us kernel."""
    tr = Trace()
    for n in (1, 2, 3):
        t0 = STEP_US * (n - 1)
        tr.step(n, t0, STEP_US).cpu(maker, t0 + 5, 6)
        if after is not None:
            tr.cpu(after, t0 + 12, 4)
        (tr
         .cpu("aten::to", t0 + 20, wait_us + 20)
         .cpu("aten::_to_copy", t0 + 21, wait_us + 18)
         .cpu("aten::copy_", t0 + 22, wait_us + 16)
         .launch(t0 + 23, 5, t0 + 29, 1.5, kernel="Memcpy HtoD (Pageable -> Device)",
                 gpu_cat="gpu_memcpy", api="cudaMemcpyAsync")
         .cpu("cudaStreamSynchronize", t0 + 30, wait_us, "cuda_runtime")
         .cpu("aten::embedding", t0 + 100, 20)
         .launch(t0 + 105, 5, t0 + 120, 400.0, kernel="gather_kernel")
         .cpu("cudaDeviceSynchronize", t0 + 130, 400, "cuda_runtime"))
    return tr


@pytest.mark.parametrize("maker,after", [("aten::arange", None),
                                         ("aten::lift_fresh", "aten::detach_")])  # tensor()
def test_a_host_made_tensor_copied_each_step_is_offered_made_on_the_device(
        maker: str, after: str | None) -> None:
    got = host_tensors(_tensor_trace(maker, after=after).frame(), 3, STEP_US)
    assert got is not None and got["fix"] == "tensor-on-device"
    assert got["evidence"]["copies_per_step"] == 1
    assert got["us_per_step"] == pytest.approx(80.0)  # the copy op, its wait inside it
    assert got["where"][0]["name"] == maker
    assert "device=x.device" in got["hint"]
    assert 1.0 < got["predicted_speedup"] <= got["max_speedup"] * 1.001


@pytest.mark.parametrize("maker,wait_us", [
    ("aten::relu", 60.0),  # the copied tensor was not made on the host in the step
    ("aten::arange", 5.0),  # 25 us of copy op: under MIN_PCT
])
def test_no_host_tensor_finding_without_a_host_maker_or_under_its_share(maker: str,
                                                                        wait_us: float) -> None:
    assert host_tensors(_tensor_trace(maker, wait_us).frame(), 3, STEP_US) is None


def test_the_entries_are_offered_with_the_wide_interval_of_an_entry_without_pairs() -> None:
    opps = code_fixes(_conv_trace().frame(), None, (), STEP_US)
    (conv,) = [o for o in opps if o["fix"] == "channels-last"]
    band = predicted_interval(conv)
    value = conv["predicted_speedup"]
    assert band["low"] <= value / 1.5 * 1.0001 and band["high"] >= value / 0.5 * 0.9999


def _catalogue_run(case: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    about = json.loads((CATALOGUE / "catalogue_truth.json").read_text())["cases"][case]
    return about, committed.run(CATALOGUE / about["record"]["run"]).analysis.opportunities


@pytest.mark.slow
def test_the_h100_conv_net_is_offered_channels_last_first() -> None:
    """The catalogue's NCHW conv net (cuDNN transposes a quarter of its GPU time); its
    manifest predates `cudnn_benchmark`, so the hint says it does not know the flag."""
    _, opps = _catalogue_run("conv_benchmark_off")
    assert opps[0]["fix"] == "channels-last"
    assert "does not say" in str(opps[0]["hint"])


@pytest.mark.slow
def test_the_h100_host_made_positions_are_offered_on_the_device_within_the_interval() -> None:
    """`torch.arange(2048).cuda()` each step: offered, and the device-made arange timed by
    hand without the profiler lies inside the stated interval."""
    about, opps = _catalogue_run("host_created_tensor")
    (found,) = [o for o in opps if o.get("fix") == "tensor-on-device"]
    band = found["predicted_interval"]
    assert isinstance(band, dict)
    assert band["low"] <= float(str(about["measured_speedup"])) <= band["high"]


@pytest.mark.slow
def test_no_deleting_entry_on_a_program_without_their_evidence() -> None:
    """The pageable MLP: zero_grad() sets None, its copy is a 16 MiB batch, no convolution."""
    _, opps = _catalogue_run("pageable_copy")
    fixes = {o.get("fix") for o in opps}
    assert not fixes & {"channels-last", "zero-grad-none", "tensor-on-device"}


NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _ddp_trace(micro: int = 2, synced: tuple[bool, ...] = (True, True),
               nccl_us: float = 150.0) -> Trace:
    """Three 1000 us steps of rank 0, each `micro` DDP forwards (80 us kernel each) and
    backward passes; the backward of micro-step k all-reduces (a `c10d::allreduce_` on the
    backward thread launching a `nccl_us` NCCL kernel) where `synced[k]`."""
    tr = Trace()
    for n in (1, 2, 3):
        t0 = STEP_US * (n - 1)
        tr.step(n, t0, STEP_US)
        for k in range(micro):
            at = t0 + 10 + k * 350
            (tr.region("DistributedDataParallel.forward", at, 60)
             .launch(at + 5, 5, at + 12, 80.0, kernel="gemm_kernel"))
            tr.cpu("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                   at + 100, 60, tid=2)
            if synced[k]:
                (tr.cpu("c10d::allreduce_", at + 105, 40, tid=2)
                 .launch(at + 110, 5, at + 120, nccl_us, kernel=NCCL, stream=20, tid=2))
        tr.cpu("cudaDeviceSynchronize", t0 + 10 + micro * 350, 200, "cuda_runtime")
    return tr


def test_an_allreduce_after_every_micro_step_is_offered_no_sync() -> None:
    got = ddp_accumulation(_ddp_trace().frame(), 3, STEP_US)
    assert got is not None and got["fix"] == "ddp-no-sync"
    assert got["evidence"]["micro_steps"] == 2
    assert got["evidence"]["repeated_allreduces_per_step"] == 1  # the first micro-step's
    assert got["evidence"]["allreduce_gpu_us_per_step"] == pytest.approx(150.0)
    assert "no_sync()" in got["hint"]
    assert got["predicted_speedup"] > 1.0


@pytest.mark.parametrize("micro,synced,nccl_us", [
    (2, (False, True), 150.0),  # no_sync on the first micro-step already
    (1, (True,), 150.0),  # one backward a step: nothing accumulates
    (2, (True, True), 10.0),  # 10 us of NCCL and a 40 us call a step: under MIN_PCT
])
def test_no_sync_is_not_offered_where_used_without_accumulation_or_small(
        micro: int, synced: tuple[bool, ...], nccl_us: float) -> None:
    assert ddp_accumulation(_ddp_trace(micro, synced, nccl_us).frame(), 3, STEP_US) is None


DELETING_SET = (Path(__file__).resolve().parents[3] / "benchmarks" / "validation" / "data"
                / "gpu_h100_heldout_deleting")


def _on_development_run(case: str, fix: str, name: str) -> tuple[dict[str, object], float]:
    """The entry `name`'s opportunity on the committed H100 recording of `case` (a
    development program since its prediction was read) and the gain of `fix` measured
    without the profiler."""
    truth = json.loads((DELETING_SET / "truth.json").read_text())["cases"][case]
    run = committed.run(DELETING_SET / truth["record"]["run"])
    opp = next(o for o in run.analysis.opportunities if o.get("cause") == name)
    return opp, float(truth["fixes"][fix]["speedup"])


@pytest.mark.slow
def test_a_foreach_zeroing_counts_backwards_adds_into_the_zeroed_gradients() -> None:
    """`zero_grad(set_to_none=False)` on a fused AdamW zeroes every gradient in one
    `_foreach_zero_`, and backward then adds each new gradient into its buffer (96 adds a
    step): those adds go with set_to_none, and the measured gain lies in the stated
    interval."""
    opp, measured = _on_development_run("zero_grad_false", "set_to_none", "zeroed_grads")
    assert opp["fix"] == "zero-grad-none"
    assert opp["evidence"]["zero_ops_per_step"] == 1  # one foreach op over them all
    assert opp["evidence"]["accumulate_adds_per_step"] > 1
    band = opp["predicted_interval"]
    assert band["low"] <= measured <= band["high"]


@pytest.mark.slow
def test_ddp_accumulation_counts_the_reducers_work_with_its_all_reduces() -> None:
    """DDP, one rank on NCCL, 4 micro-steps that each all-reduce: no_sync on the first three
    also skips the reducer's copies into and out of its buckets and its hook after each
    gradient; with them the entry is offered and the measured gain lies in the stated
    interval."""
    opp, measured = _on_development_run("ddp_accumulate", "no_sync", "ddp_accumulation")
    assert opp["fix"] == "ddp-no-sync"
    assert opp["evidence"]["micro_steps"] == 4
    band = opp["predicted_interval"]
    assert band["low"] <= measured <= band["high"]
