"""FLOPs and bytes from shapes and dtypes: one formula per test, numbers worked by hand."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from autoprof.analysis.metrics.flops import has_rule, op_cost, op_costs

BF = "c10::BFloat16"


def cost(name: str, dims: list, types: list, flops: float = math.nan):
    return op_cost(name, json.dumps(dims), json.dumps(types), flops)


def test_mm_counts_two_mnk_and_three_operands() -> None:
    c = cost("aten::mm", [[64, 32], [32, 16]], ["c10::BFloat16"] * 2)
    assert c.flops == 2 * 64 * 32 * 16
    assert c.bytes == (64 * 32 + 32 * 16 + 64 * 16) * 2
    assert (c.dtype, c.flops_source, c.bytes_source) == ("bf16", "shapes", "shapes")


def test_addmm_reads_the_bias_and_multiplies_inputs_one_and_two() -> None:
    c = cost("aten::addmm", [[16], [64, 32], [32, 16], [], []],
             ["float", "float", "float", "Scalar", "Scalar"])
    assert c.flops == 2 * 64 * 32 * 16
    assert c.bytes == (16 + 64 * 32 + 32 * 16 + 64 * 16) * 4
    assert c.dtype == "fp32"


def test_bmm_and_broadcast_matmul_multiply_by_the_batch() -> None:
    assert cost("aten::bmm", [[4, 8, 2], [4, 2, 3]], ["c10::Half"] * 2).flops == 2 * 4 * 8 * 2 * 3
    c = cost("aten::matmul", [[5, 1, 8, 2], [4, 2, 3]], ["c10::Half"] * 2)
    assert c.flops == 2 * 20 * 8 * 2 * 3
    assert c.dtype == "fp16"
    assert math.isnan(cost("aten::mm", [[4, 3], [5, 6]], ["float"] * 2).flops)  # K mismatch


def test_linear_uses_the_transposed_weight() -> None:
    c = cost("aten::linear", [[8, 128, 512], [1024, 512], [1024]], ["c10::BFloat16"] * 3)
    assert c.flops == 2 * 8 * 128 * 512 * 1024


def test_convolution_with_groups_and_same_size_output() -> None:
    # 2 x 32 x 10 x 10 input, 64 filters of 8 channels (groups = 4), 3x3
    c = cost("aten::cudnn_convolution", [[2, 32, 10, 10], [64, 8, 3, 3], [], []],
             ["c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList"])
    assert c.flops == 2 * (2 * 64 * 10 * 10) * 8 * 9
    assert c.bytes == (2 * 32 * 100 + 64 * 8 * 9 + 2 * 64 * 100) * 2


@pytest.mark.parametrize(("name", "q"), [
    ("aten::scaled_dot_product_attention", [2, 4, 128, 64]),
    ("aten::_cudnn_attention_forward", [2, 4, 128, 64]),
    ("aten::_flash_attention_forward", [2, 128, 4, 64]),  # (batch, seq, heads, dim)
])
def test_attention_forward_is_four_b_h_l_l_d(name: str, q: list[int]) -> None:
    c = cost(name, [q, q, q, [], []], ["c10::BFloat16"] * 3 + ["", "Scalar"])
    assert c.flops == 4 * 2 * 4 * 128 * 128 * 64


def test_elementwise_bytes_are_inputs_plus_broadcast_output() -> None:
    c = cost("aten::add", [[64, 64], [64], []], ["float", "float", "Scalar"])
    assert c.flops == 64 * 64
    assert c.bytes == (64 * 64 + 64 + 64 * 64) * 4
    inplace = cost("aten::add_", [[64, 64], [1, 64], []], ["float", "float", "Scalar"])
    assert inplace.bytes == (64 * 64 + 64 + 64 * 64) * 4
    relu = cost("aten::relu", [[10]], ["c10::BFloat16"])
    assert (relu.flops, relu.bytes) == (10, 40)


def test_copy_reduction_and_fill() -> None:
    assert cost("aten::copy_", [[100], [100], []], ["c10::Half", "float", "Scalar"]).bytes == 600
    assert cost("aten::copy_", [[100], [100], []], ["c10::Half", "float", "Scalar"]).flops == 0
    assert cost("aten::sum", [[100, 10], [], []], ["float", "ScalarList", "Scalar"]).bytes == 4000
    assert cost("aten::fill_", [[100], []], ["double", "Scalar"]).bytes == 800


def test_recorded_flops_win_and_unknown_ops_have_nothing() -> None:
    c = cost("aten::mm", [[2, 2], [2, 2]], ["float"] * 2, flops=5.0)
    assert (c.flops, c.flops_source, c.bytes) == (5.0, "trace", 48.0)
    none = cost("aten::nonzero", [[10]], ["float"])
    assert math.isnan(none.flops) and math.isnan(none.bytes) and none.flops_source == ""
    assert not has_rule("aten::nonzero") and has_rule("aten::gelu_")
    no_shapes = op_cost("aten::mm", "", "")
    assert math.isnan(no_shapes.flops) and no_shapes.dtype == ""


def test_op_costs_keeps_the_index_and_handles_missing_columns() -> None:
    ops = pd.DataFrame({"name": ["aten::mm", "aten::relu", "aten::mm"],
                        "input_dims": ["[[2, 3], [3, 4]]", "[[5]]", "[[2, 3], [3, 4]]"],
                        "input_types": ['["float", "float"]', '["float"]', '["float", "float"]'],
                        "flops": [math.nan, math.nan, 7.0]}, index=[10, 20, 30])
    out = op_costs(ops)
    assert list(out.index) == [10, 20, 30]
    assert list(out["flops"]) == [48.0, 5.0, 7.0]
    assert list(out["flops_source"]) == ["shapes", "shapes", "trace"]
    assert op_costs(ops.iloc[:0]).empty


def test_backward_ops_in_the_order_torch_records_them() -> None:
    # input dims exactly as torch 2.13 records conv2d(8 -> 16, 3x3, padding 1) backward
    conv = cost("aten::convolution_backward",
                [[2, 16, 10, 10], [2, 8, 10, 10], [16, 8, 3, 3], [], [], [], [], [], [], [], []],
                ["float"] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar",
                                                      "ScalarList"])
    forward = 2 * (2 * 16 * 10 * 10) * 8 * 9
    assert conv.flops == 2 * forward
    q = [2, 4, 32, 16]
    bwd = cost("aten::_scaled_dot_product_flash_attention_for_cpu_backward",
               [q, q, q, q, q, [2, 4, 32], [], [], [], []], ["float"] * 6 + ["Scalar"] * 2)
    fwd = cost("aten::_scaled_dot_product_flash_attention_for_cpu", [q, q, q, [], []],
               ["float"] * 3 + ["Scalar"] * 2)
    assert fwd.flops == 4 * 2 * 4 * 32 * 32 * 16
    assert bwd.flops == 2.5 * fwd.flops
    bshd = [2, 32, 4, 16]  # (batch, seq, heads, dim): the flash kernels' own layout
    flash = cost("aten::_flash_attention_backward", [bshd] * 4, [BF] * 4)
    assert flash.flops == 2.5 * fwd.flops and flash.dtype == "bf16"



@pytest.mark.parametrize("name", ["aten::mm", "aten::addmm", "aten::conv2d", "aten::add",
                                  "aten::scaled_dot_product_attention", "aten::linear",
                                  "aten::convolution_backward", "aten::copy_", "aten::sum"])
@pytest.mark.parametrize(("dims", "types"), [
    ("", ""), ("not json", "[\"float\"]"), ("{}", "{}"), ("[1, 2]", "[\"float\", \"float\"]"),
    ("[[2, 2], [2, 2]]", "\"float\""), ("[[2, \"x\"], [2, 2]]", "[\"float\", \"float\"]"),
    ("[[], []]", "[\"float\", \"float\"]"), ("[[0, 4], [4, 0]]", "[\"float\", \"float\"]"),
    ("[[2, 3, 4, 5], [7, 1, 3, 3]]", "[\"float\", \"float\"]"),  # channels do not divide
    ("[[2, 2], [2, 2]]", "[\"weird::Type\", null]"),
])
def test_odd_shapes_and_types_give_no_number_or_a_sane_one(name: str, dims: str,
                                                          types: str) -> None:
    c = op_cost(name, dims, types)
    for value in (c.flops, c.bytes):
        assert math.isnan(value) or value >= 0


def test_strided_convolution_uses_its_recorded_geometry() -> None:
    dims = json.dumps([[2, 3, 224, 224], [64, 3, 7, 7], [], []])
    types = json.dumps([BF, BF, "ScalarList", "ScalarList"])
    # cudnn_convolution(self, weight, padding, stride, dilation, groups, ...)
    values = json.dumps(["", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"])
    c = op_cost("aten::cudnn_convolution", dims, types, math.nan, values)
    assert c.flops == 2 * (2 * 64 * 112 * 112) * 3 * 49
    assert op_cost("aten::cudnn_convolution", dims, types).flops == 4 * c.flops  # no geometry
    conv2d = json.dumps(["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"])  # stride first
    assert op_cost("aten::conv2d", dims, types, math.nan, conv2d).flops == c.flops
