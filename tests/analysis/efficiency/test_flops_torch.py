"""FLOP formulas against what torch itself records: a small forward + backward step of
linear layers, convolutions and attention, profiled on the CPU with record_shapes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import autoprof.analysis as analysis
from autoprof.analysis.metrics.flops import is_matrix_op, op_costs

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _outermost_matrix_ops(events: pd.DataFrame) -> pd.DataFrame:
    """Matrix ops not inside another (linear, not its addmm; the SDPA call, not its kernel)."""
    names = events["name"].astype(str)
    matrix = set(events.index[(events["cat"] == "cpu_op").to_numpy() & names.map(is_matrix_op)])
    parent = events["parent"].to_numpy()

    def outermost(row: int) -> bool:
        p = parent[row]
        while p >= 0:
            if p in matrix:
                return False
            p = parent[p]
        return True

    return events.loc[sorted(r for r in matrix if outermost(r))]


def _profiled_flops(tmp_path: Path, step) -> tuple[float, set[str]]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                record_shapes=True) as prof:
        step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    ops = _outermost_matrix_ops(analysis.load(path).events)
    return float(op_costs(ops)["flops"].sum()), set(ops["name"].astype(str))


def test_linear_forward_and_backward(tmp_path: Path) -> None:
    tokens, width = 32, 24
    layers = [torch.nn.Linear(width, width) for _ in range(3)]
    x = torch.randn(tokens, width, requires_grad=True)

    def step() -> None:
        y = x
        for layer in layers:
            y = torch.relu(layer(y))
        y.sum().backward()

    flops, names = _profiled_flops(tmp_path, step)
    assert flops == 3 * 2 * tokens * width * width * len(layers)
    assert {"aten::linear", "aten::mm"} <= names


def test_conv_forward_and_backward(tmp_path: Path) -> None:
    conv = torch.nn.Conv2d(8, 16, 3, padding=1)
    x = torch.randn(2, 8, 10, 10, requires_grad=True)
    flops, names = _profiled_flops(tmp_path, lambda: conv(x).sum().backward())
    assert flops == 3 * 2 * 2 * 16 * 10 * 10 * 8 * 9
    assert "aten::convolution_backward" in names


def test_attention_forward_and_backward(tmp_path: Path) -> None:
    q, k, v = (torch.randn(2, 4, 32, 16, requires_grad=True) for _ in range(3))
    flops, names = _profiled_flops(
        tmp_path, lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())
    assert flops == 3.5 * 4 * 2 * 4 * 32 * 32 * 16
    assert "aten::scaled_dot_product_attention" in names


def test_strided_transposed_and_first_layer_convs(tmp_path: Path) -> None:
    stem = torch.nn.Conv2d(3, 8, 7, stride=2, padding=3)  # 32x32 -> 16x16
    up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)  # 16x16 -> 32x32
    x = torch.randn(2, 3, 32, 32)  # no grad: the stem computes only its weight gradient

    def step() -> None:
        up(stem(x)).sum().backward()

    flops, names = _profiled_flops(tmp_path, step)
    stem_fwd = 2 * (2 * 8 * 16 * 16) * 3 * 49
    up_fwd = 2 * (2 * 8 * 16 * 16) * 4 * 4  # each input element meets 4 channels x 2x2
    assert flops == stem_fwd * 2 + up_fwd * 3
    assert "aten::convolution_backward" in names
