"""FLOPs and bytes moved by one op, from its recorded input shapes and dtypes.

Reads the events table's ``input_dims`` (``[[4096, 4096], [4096, 4096]]``) and
``input_types`` (``["c10::BFloat16", "c10::BFloat16"]``), which torch writes only under
``record_shapes=True``; the trace's own ``flops`` (``with_flops=True``) wins where present.

| name | input_dims | flops | bytes | dtype | flops_source |
| --- | --- | --- | --- | --- | --- |
| aten::mm | [[4096, 4096], [4096, 4096]] (bf16) | 2*4096^3 | 3*4096^2*2 | bf16 | shapes |
| aten::add | [[4096, 4096], [4096, 4096], []] (bf16) | 4096^2 | 3*4096^2*2 | bf16 | shapes |

FLOPs are counted for the ops whose cost is well defined: matrix products (``mm``, ``addmm``,
``bmm``, ``baddbmm``, ``matmul``, ``linear``: 2*M*N*K), convolutions (2 * output elements *
input channels per group * kernel size; the output's size from the stride, padding and
dilation in the op's ``Concrete Inputs`` (``input_values``), else taken equal to the
input's: stride 1, "same" padding), and
scaled dot-product attention (forward 4 * batch * heads * Lq * Lkv * head dim, not causal;
backward 2.5x that), ``convolution_backward`` (twice the forward, over grad_output's size).
Elementwise ops count one FLOP per output element. Bytes are inputs read plus output
written for elementwise, reduction (input only), copy and normalization ops, and the three
operands of matrix products; every other op has neither.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.op_inputs import (
    Cost,
    Tensor,
    broadcast,
    peak_dtype_of,
    tensors,
    tensors_at,
)
from autoprof.analysis.metrics.stats import texts_or_blank

# --- matrix products -----------------------------------------------------------------------

def _gemm(a: Tensor, b: Tensor, bias: Tensor | None = None) -> Cost | None:
    """a [..., M, K] @ b [..., K, N] with broadcast batch dims (1-d operands as in matmul)."""
    sa, sb = list(a.shape), list(b.shape)
    if not sa or not sb:
        return None
    sa = [1, *sa] if len(sa) == 1 else sa
    sb = [*sb, 1] if len(sb) == 1 else sb
    m, k, n = sa[-2], sa[-1], sb[-1]
    if sb[-2] != k:
        return None
    batch = math.prod(broadcast([sa[:-2], sb[:-2]]))
    out_bytes = batch * m * n * a.size
    moved = a.nbytes + b.nbytes + out_bytes + (bias.nbytes if bias else 0)
    return Cost(flops=float(2 * batch * m * n * k), bytes=float(moved), dtype=peak_dtype_of(a),
                flops_source="shapes", bytes_source="shapes")


def _mm(ts: list[Tensor | None]) -> Cost | None:
    ab = tensors_at(ts, 0, 1)
    return _gemm(*ab) if ab else None


def _addmm(ts: list[Tensor | None]) -> Cost | None:  # addmm / baddbmm: (self, m1, m2)
    ab = tensors_at(ts, 1, 2)
    return _gemm(ab[0], ab[1], ts[0]) if ab else None


def _linear(ts: list[Tensor | None]) -> Cost | None:  # input [..., in], weight [out, in]
    xw = tensors_at(ts, 0, 1)
    if not xw or len(xw[1].shape) != 2:
        return None
    x, w = xw
    weight_t = Tensor([w.shape[1], w.shape[0]], w.size, w.dtype)
    return _gemm(x, weight_t, ts[2] if len(ts) > 2 else None)


@dataclass(frozen=True)
class _Geometry:
    """A convolution's stride, padding, dilation (per spatial dim) and whether it is
    transposed, from the op's recorded scalar arguments."""

    stride: list[int]
    padding: list[int] | str  # "same" / "valid" for _convolution_mode
    dilation: list[int]
    transposed: bool = False
    output_padding: list[int] | None = None


# op -> where its Concrete Inputs hold stride, padding, dilation, transposed, output_padding
_CONV_ARGS: dict[str, tuple[int, int, int, int | None, int | None]] = {
    "conv1d": (3, 4, 5, None, None), "conv2d": (3, 4, 5, None, None),
    "conv3d": (3, 4, 5, None, None), "_convolution_mode": (3, 4, 5, None, None),
    "convolution": (3, 4, 5, 6, 7), "_convolution": (3, 4, 5, 6, 7),
    "cudnn_convolution": (3, 2, 4, None, None), "mkldnn_convolution": (4, 3, 5, None, None),
    "miopen_convolution": (4, 3, 5, None, None), "cudnn_convolution_relu": (3, 4, 5, None, None),
    "cudnn_convolution_add_relu": (5, 6, 7, None, None),
}


def _scalar(text: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    try:  # Python literals as torch writes them: "[2, 2]", "1", "False", "[True, False]"
        return json.loads(text.replace("True", "true").replace("False", "false"))
    except ValueError:
        return text.strip("'\"")


def _geometry(op: str, values_text: str, dims: int) -> _Geometry | None:
    """The convolution's geometry from its Concrete Inputs; None when they are not there."""
    where = _CONV_ARGS.get(op.split("::", 1)[-1])
    try:
        values = json.loads(values_text) if values_text else None
    except ValueError:
        return None
    if where is None or not isinstance(values, list) or len(values) <= max(where[:3]):
        return None

    def ints(i: int | None) -> list[int] | None:
        v = _scalar(values[i]) if i is not None and i < len(values) else None
        v = [v] * dims if isinstance(v, int) and not isinstance(v, bool) else v
        if not isinstance(v, list) or len(v) != dims:
            return None
        return [int(x) for x in v] if all(isinstance(x, int) for x in v) else None

    stride, dilation = ints(where[0]), ints(where[2])
    padding: list[int] | str | None = ints(where[1])
    if padding is None and isinstance(_scalar(values[where[1]]), str):
        padding = str(_scalar(values[where[1]]))
    if stride is None or dilation is None or padding is None:
        return None
    transposed = bool(_scalar(values[where[3]])) if where[3] is not None else False
    return _Geometry(stride, padding, dilation, transposed, ints(where[4]))


def _out_spatial(spatial: list[int], kernel: list[int], g: _Geometry) -> list[int]:
    out = []
    for i, (size, k) in enumerate(zip(spatial, kernel, strict=True)):
        s, d = g.stride[i], g.dilation[i]
        if g.padding == "same":
            out.append(size)
            continue
        p = 0 if g.padding == "valid" or isinstance(g.padding, str) else g.padding[i]
        if g.transposed:
            extra = g.output_padding[i] if g.output_padding else 0
            out.append((size - 1) * s - 2 * p + d * (k - 1) + extra + 1)
        else:
            out.append((size + 2 * p - d * (k - 1) - 1) // s + 1)
    return out


def _conv(ts: list[Tensor | None], geometry: _Geometry | None = None) -> Cost | None:
    """input [N, C, *spatial], weight [Cout, C/groups, *kernel] ([C, Cout/groups, *kernel]
    when transposed); the output's size from the geometry, else the input's (stride 1,
    "same" padding)."""
    xw = tensors_at(ts, 0, 1)
    if not xw:
        return None
    x, w = xw
    if len(x.shape) < 3 or len(w.shape) != len(x.shape) or w.shape[1] == 0:
        return None
    n, c, spatial, kernel = x.shape[0], x.shape[1], x.shape[2:], w.shape[2:]
    if geometry is not None and geometry.transposed:
        groups = c // w.shape[0] if w.shape[0] and c % w.shape[0] == 0 else 1
        cout = w.shape[1] * groups
        out = _out_spatial(spatial, kernel, geometry)
        flops = 2 * n * c * math.prod(spatial) * w.shape[1] * math.prod(kernel)
        out_numel = n * cout * math.prod(out)
    else:
        cout, c_per_group = w.shape[0], w.shape[1]
        if c % c_per_group:
            return None
        out = _out_spatial(spatial, kernel, geometry) if geometry else spatial
        out_numel = n * cout * math.prod(out)
        flops = 2 * out_numel * c_per_group * math.prod(kernel)
    if any(o <= 0 for o in out):
        return None
    moved = x.nbytes + w.nbytes + out_numel * x.size
    return Cost(flops=float(flops), bytes=float(moved), dtype=peak_dtype_of(x),
                flops_source="shapes", bytes_source="shapes")


def _conv_backward(ts: list[Tensor | None], values_text: str = "") -> Cost | None:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask): each gradient of input and weight that
    ``output_mask`` asks for (both when it was not recorded) costs the forward's FLOPs."""
    gxw = tensors_at(ts, 0, 1, 2)
    if not gxw:
        return None
    grad, x, w = gxw
    if len(x.shape) < 3 or len(w.shape) != len(x.shape) or len(grad.shape) != len(x.shape):
        return None
    try:
        values = json.loads(values_text) if values_text else []
    except ValueError:
        values = []
    values = values if isinstance(values, list) else []
    transposed = len(values) > 7 and _scalar(values[7]) is True
    mask = _scalar(values[10]) if len(values) > 10 else None
    grads = (sum(1 for m in mask[:2] if m is True)
             if isinstance(mask, list) and len(mask) >= 2 else 2)
    # the forward: each output element (each input element when transposed) meets a
    # weight slice of w.shape[1] channels x kernel
    points = x.numel if transposed else grad.numel
    flops = grads * 2 * points * w.shape[1] * math.prod(w.shape[2:])
    moved = 2 * grad.nbytes + 2 * x.nbytes + 2 * w.nbytes  # read each, write two gradients
    return Cost(flops=float(flops), bytes=float(moved), dtype=peak_dtype_of(x),
                flops_source="shapes", bytes_source="shapes")


def _attention(layout: str, backward: bool = False
               ) -> Callable[[list[Tensor | None]], Cost | None]:
    """SDPA forward: q [B, H, Lq, E], k [B, H, Lkv, E], v [B, H, Lkv, Ev] ("bhsd"), or
    [B, L, H, E] ("bshd": the flash / efficient kernels' own layout). Backward ops take
    (grad_out, q, k, v, ...) and count 2.5x the forward (FlashAttention's count: the two
    products recomputed or reused, plus the gradients of q, k, v and the scores)."""
    first = 1 if backward else 0

    def cost(ts: list[Tensor | None]) -> Cost | None:
        qkv = tensors_at(ts, first, first + 1, first + 2)
        if not qkv or any(len(t.shape) != 4 for t in qkv):
            return None
        q, k, v = qkv
        if layout == "bhsd":
            (b, h, lq, e), lkv, ev = q.shape, k.shape[2], v.shape[3]
        else:
            (b, lq, h, e), lkv, ev = q.shape, k.shape[1], v.shape[3]
        flops = 2 * b * h * lq * lkv * e + 2 * b * h * lq * lkv * ev
        moved = q.nbytes + k.nbytes + v.nbytes + b * h * lq * ev * q.size
        if backward:  # reads grad_out, q, k, v, out; writes dq, dk, dv
            flops, moved = flops * 5 // 2, 2 * moved + q.nbytes + k.nbytes + v.nbytes
        return Cost(flops=float(flops), bytes=float(moved), dtype=peak_dtype_of(q),
                    flops_source="shapes", bytes_source="shapes")

    return cost


# --- memory-bound ops ---------------------------------------------------------------------

def _elementwise(ts: list[Tensor | None], inplace: bool) -> Cost | None:
    tensors = [t for t in ts if t is not None]
    if not tensors or tensors[0].size == 0:
        return None
    first = tensors[0]
    out_numel = math.prod(broadcast([t.shape for t in tensors]))
    read = sum(t.nbytes for t in tensors)
    written = first.nbytes if inplace else out_numel * first.size
    return Cost(flops=float(out_numel), bytes=float(read + written), dtype=peak_dtype_of(first),
                flops_source="shapes", bytes_source="shapes")


def _reduction(ts: list[Tensor | None]) -> Cost | None:
    first = ts[0] if ts else None
    if first is None or first.size == 0:
        return None
    return Cost(flops=float(first.numel), bytes=float(first.nbytes), dtype=peak_dtype_of(first),
                flops_source="shapes", bytes_source="shapes")


def _copy(ts: list[Tensor | None]) -> Cost | None:  # copy_(self, src): read src, write self
    pair = tensors_at(ts, 0, 1)
    if not pair:
        return None
    dst, src = pair
    return Cost(flops=0.0, bytes=float(dst.nbytes + src.nbytes), dtype=peak_dtype_of(dst),
                flops_source="shapes", bytes_source="shapes")


def _fill(ts: list[Tensor | None]) -> Cost | None:  # write only
    first = ts[0] if ts else None
    if first is None:
        return None
    return Cost(flops=0.0, bytes=float(first.nbytes), dtype=peak_dtype_of(first),
                flops_source="shapes", bytes_source="shapes")


_ELEMENTWISE = frozenset(
    "add sub mul div neg abs exp exp2 log log2 log1p sqrt rsqrt pow reciprocal relu gelu silu "
    "sigmoid tanh clamp clamp_min clamp_max where masked_fill maximum minimum threshold "
    "hardtanh leaky_relu elu mish erf sin cos square addcmul addcdiv lerp remainder fmod "
    "floor ceil round sign logical_not eq ne lt le gt ge bitwise_and bitwise_or "
    "threshold_backward gelu_backward silu_backward sigmoid_backward tanh_backward "
    "_softmax softmax log_softmax _log_softmax _softmax_backward_data dropout native_dropout "
    "layer_norm native_layer_norm native_layer_norm_backward group_norm native_group_norm "
    "batch_norm native_batch_norm cudnn_batch_norm _batch_norm_impl_index rms_norm "
    "_fused_rms_norm _foreach_add _foreach_mul".split()
)
_REDUCTIONS = frozenset("sum mean amax amin max min norm linalg_vector_norm var std prod "
                        "argmax argmin any all logsumexp".split())
_GEMMS: dict[str, Callable[[list[Tensor | None]], Cost | None]] = {
    "mm": _mm, "bmm": _mm, "matmul": _mm, "addmm": _addmm, "baddbmm": _addmm,
    "linear": _linear,
    **{c: _conv for c in ("convolution", "_convolution", "conv1d", "conv2d", "conv3d",
                          "cudnn_convolution", "mkldnn_convolution", "miopen_convolution",
                          "_convolution_mode", "cudnn_convolution_relu",
                          "cudnn_convolution_add_relu", "_nnpack_spatial_convolution")},
    **{a: _attention("bhsd") for a in ("scaled_dot_product_attention",
                                       "_scaled_dot_product_flash_attention",
                                       "_scaled_dot_product_efficient_attention",
                                       "_scaled_dot_product_cudnn_attention",
                                       "_cudnn_attention_forward",
                                       "_scaled_dot_product_attention_math",
                                       "_scaled_dot_product_flash_attention_for_cpu")},
    **{a: _attention("bshd") for a in ("_flash_attention_forward",
                                       "_efficient_attention_forward")},
    "convolution_backward": _conv_backward,
    **{a: _attention("bhsd", backward=True) for a in (
        "_scaled_dot_product_flash_attention_backward",
        "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_cudnn_attention_backward", "_cudnn_attention_backward",
        "_scaled_dot_product_flash_attention_for_cpu_backward")},
    **{a: _attention("bshd", backward=True) for a in ("_flash_attention_backward",
                                                      "_efficient_attention_backward")},
}


def _rule(name: str) -> Callable[[list[Tensor | None]], Cost | None] | None:
    base = name.split("::", 1)[-1]
    if base in _GEMMS:
        return _GEMMS[base]
    if base in ("copy_", "_to_copy", "clone", "contiguous"):
        return _copy if base == "copy_" else (lambda ts: _elementwise(ts[:1], False))
    if base in ("fill_", "zero_", "zeros_like", "ones_like"):
        return _fill
    if base in _REDUCTIONS:
        return _reduction
    stem = base.rstrip("_")
    if stem in _ELEMENTWISE:
        inplace = base.endswith("_") and not base.startswith("_")
        return lambda ts: _elementwise(ts, inplace)
    return None


def has_rule(name: str) -> bool:
    """Whether ``op_cost`` knows a formula for ops of this name."""
    return _rule(name) is not None


def is_matrix_op(name: str) -> bool:
    """Matrix products, convolutions and attention: the ops tensor cores run."""
    return name.split("::", 1)[-1] in _GEMMS


def op_cost(name: str, dims_text: str, types_text: str, recorded_flops: float = math.nan,
            values_text: str = "") -> Cost:
    """FLOPs, bytes and dtype of one op (``values_text``: its ``Concrete Inputs``, which give
    a convolution's stride and padding); the trace's ``flops`` replaces the estimate."""
    rule = _rule(name)
    inputs = tensors(dims_text, types_text)
    if rule is _conv and inputs and inputs[0] is not None:
        found = _conv(inputs, _geometry(name, values_text, len(inputs[0].shape) - 2))
    elif rule is _conv_backward:
        found = _conv_backward(inputs, values_text)
    else:
        found = rule(inputs) if rule else None
    cost = found or Cost()
    if math.isfinite(recorded_flops):
        return Cost(flops=float(recorded_flops), bytes=cost.bytes, dtype=cost.dtype,
                    flops_source="trace", bytes_source=cost.bytes_source)
    return cost


def op_costs(ops: pd.DataFrame) -> pd.DataFrame:
    """``op_cost`` for every row of ``ops`` (columns ``name``, ``input_dims``, ``flops``,
    and ``input_types`` / ``input_values`` where the table has them), computed once per
    distinct row; same index as ``ops``."""
    cols = ["flops", "bytes", "dtype", "flops_source", "bytes_source"]
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c in ("flops", "bytes") else object)
                             for c in cols}, index=ops.index)
    n = len(ops)
    names, dims = texts_or_blank(ops["name"]), texts_or_blank(ops["input_dims"])
    types = texts_or_blank(ops["input_types"]) if "input_types" in ops else [""] * n
    values = texts_or_blank(ops["input_values"]) if "input_values" in ops else [""] * n
    flops = ops["flops"].astype(float).fillna(-1.0).tolist()
    # only convolutions read their scalar arguments: elsewhere they would split equal ops
    reads_args = (*_CONV_ARGS, "convolution_backward")
    seen: dict[tuple[str, str, str, float, str], int] = {}  # distinct key -> its code
    codes = np.array([seen.setdefault((m, d, t, f, v if m.split("::", 1)[-1] in reads_args
                                       else ""), len(seen))
                      for m, d, t, f, v in zip(names, dims, types, flops, values, strict=True)],
                     dtype=np.intp)
    costs = [op_cost(m, d, t, f if f >= 0 else math.nan, v) for m, d, t, f, v in seen]
    table = pd.DataFrame([[getattr(c, k) for k in cols] for c in costs], columns=cols)
    out = table.iloc[codes].reset_index(drop=True)
    out.index = ops.index
    out["flops"] = out["flops"].astype(np.float64)
    out["bytes"] = out["bytes"].astype(np.float64)
    return out
