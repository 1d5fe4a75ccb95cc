"""Fixes that change ops, replayed on small events tables: a bias add folded into its GEMM
(`addmm`) and an optimizer's ops fused into one (`fused-optimizer`); times in microseconds."""

from __future__ import annotations

import pandas as pd
import pytest
from support.attrbuild import Trace

from autoprof.analysis.metrics.replay import build_graph, replay_step
from autoprof.analysis.metrics.replay.fixes import fix_changes
from autoprof.analysis.metrics.replay.selection import bias_fold_spans


def seed() -> Trace:
    """`x @ w + b`: a matmul (30 us of host, a 10 us kernel), then the add (20 us, 5 us)."""
    return (Trace().step(1, 0, 60).region("seed", 0, 60)
            .cpu("aten::matmul", 2, 30).launch(20, 5, 26, 10)
            .cpu("aten::add", 34, 20).launch(45, 5, 51, 5))


def with_dims(t: Trace, dims: dict[str, str]) -> pd.DataFrame:
    ev = t.frame()
    ev["input_dims"] = ev["name"].astype(str).map(dims).fillna("")
    return ev


def test_a_bias_add_after_its_product_is_folded() -> None:
    ev = with_dims(seed(), {"aten::matmul": "[[64, 32], [32, 16]]",
                            "aten::add": "[[64, 16], [16], []]"})
    g = build_graph(ev)
    # the add (34-54) and the interpreter's `+` before it (32-34); the product launches its
    # GEMM itself (no op below it): it stays whole
    starts, ends = bias_fold_spans(g)
    assert starts.tolist() == pytest.approx([32.0]) and ends.tolist() == pytest.approx([54.0])
    base = replay_step(ev, 1).step_us
    folded = replay_step(ev, 1, fix_changes("addmm", "seed")).step_us
    assert folded < base - 15  # the add's 20 us of host, its launch and kernel
    # an add of two products' shapes that is not a bias is left alone
    other = with_dims(seed(), {"aten::matmul": "[[64, 32], [32, 16]]",
                               "aten::add": "[[64, 16], [64, 16], []]"})
    assert replay_step(other, 1, fix_changes("addmm", "seed")).step_us == \
        pytest.approx(replay_step(other, 1).step_us)


def test_the_matmul_composite_around_its_gemm_goes_with_the_add() -> None:
    """`aten::matmul` (2-32) calls `aten::mm` (8-28, which launches): `addmm` is dispatched
    directly, so matmul's own 10 us around mm go too, beside the add and the `+` before it."""
    t = (Trace().step(1, 0, 60).region("seed", 0, 60)
         .cpu("aten::matmul", 2, 30).cpu("aten::mm", 8, 20).launch(20, 5, 26, 10)
         .cpu("aten::add", 34, 20).launch(45, 5, 51, 5))
    ev = with_dims(t, {"aten::matmul": "[[64, 32], [32, 16]]", "aten::mm": "[[64, 32], [32, 16]]",
                       "aten::add": "[[64, 16], [16], []]"})
    starts, ends = bias_fold_spans(build_graph(ev))
    assert starts.tolist() == pytest.approx([2.0, 28.0, 32.0])
    assert ends.tolist() == pytest.approx([8.0, 32.0, 54.0])
    plain = with_dims(seed(), {"aten::matmul": "[[64, 32], [32, 16]]",
                               "aten::add": "[[64, 16], [16], []]"})
    saved_plain = replay_step(plain, 1).step_us - \
        replay_step(plain, 1, fix_changes("addmm", "seed")).step_us
    saved = replay_step(ev, 1).step_us - replay_step(ev, 1, fix_changes("addmm", "seed")).step_us
    # 10 us less host before the GEMM's launch; the GEMM's kernel, launched 6 us sooner,
    # then ends the step (30 us) 2 us after the host does
    assert saved_plain + 5.0 < saved <= saved_plain + 10.0 + 1e-6


def test_an_optimizers_ops_fused_into_one() -> None:
    """Four 20 us foreach ops, each launching a 2 us kernel, inside the optimizer's region
    (10 us of Python before them): fused, one op's cost and one launch remain."""
    t = Trace().step(1, 0, 100).region("train_step", 0, 100) \
        .region("Optimizer.step#AdamW.step", 5, 95)
    for i in range(4):
        t.cpu("aten::_foreach_mul_", 15 + 20 * i, 20).launch(16 + 20 * i, 5, 22 + 20 * i, 2)
    ev = t.frame()
    base = replay_step(ev, 1).step_us
    assert base == pytest.approx(100.0, abs=1.0)
    fused = replay_step(ev, 1, fix_changes("fused-optimizer", "train_step")).step_us
    # the 15 us before the ops stay, then one op (20 us) and one launch (5 us), then the
    # step's last 5 us of host: the four kernels are the device's shortest (2 us), all
    # floor, which a multi-tensor kernel pays once (one 2 us kernel 1 us after the launch,
    # done before the host is)
    assert fused == pytest.approx(15 + 20 + 5 + 5, abs=1.0)


def test_a_fused_optimizer_keeps_each_kernels_time_above_the_floor() -> None:
    """Kernels of 2, 2, 10 and 10 us (the shortest, 2 us, the per-kernel floor): fused,
    the floor is paid once and each kernel's time above it (the bytes it moves) stays."""
    t = Trace().step(1, 0, 100).region("train_step", 0, 100) \
        .region("Optimizer.step#AdamW.step", 5, 95)
    for i, dur in enumerate((2, 2, 10, 10)):
        t.cpu("aten::_foreach_mul_", 15 + 20 * i, 20).launch(16 + 20 * i, 5, 22 + 20 * i, dur)
    ev = t.frame()
    fused = replay_step(ev, 1, fix_changes("fused-optimizer", "train_step")).step_us
    # the kernels, 1 us after the one launch, end the step: 2 + 8 + 8 us
    assert fused == pytest.approx(15 + 20 + 5 + 1 + 2 + 8 + 8, abs=1.0)


def test_the_python_between_an_optimizers_ops_goes_with_them() -> None:
    """The same four ops 10 us apart (the unfused implementation's Python between them):
    fused, that Python goes too; the 15 us before the first op stay."""
    t = Trace().step(1, 0, 130).region("train_step", 0, 130) \
        .region("Optimizer.step#AdamW.step", 5, 125)
    for i in range(4):
        at = 15 + 30 * i
        t.cpu("aten::_foreach_mul_", at, 20).launch(at + 1, 5, at + 7, 2)
    ev = t.frame()
    assert replay_step(ev, 1).step_us == pytest.approx(130.0, abs=1.0)
    fused = replay_step(ev, 1, fix_changes("fused-optimizer", "train_step")).step_us
    assert fused == pytest.approx(15 + 20 + 5 + 5, abs=1.0)
