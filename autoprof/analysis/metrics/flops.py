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
input channels per group * kernel size; the output's spatial size is taken equal to the
input's, i.e. stride 1 and "same" padding, since the trace does not record strides), and
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

import numpy as np
import pandas as pd

DTYPE_BYTES = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
    "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
}
# torch's dtype name -> the peak table's dtype (fp32 is refined to tf32 from the kernel name)
PEAK_DTYPE = {
    "double": "fp64", "float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
}

Shape = list[int]


@dataclass(frozen=True)
class Cost:
    """What one op does: FLOPs and bytes (NaN when not known), its compute dtype (the peak
    table's name, ``""`` when not known), and where each number comes from."""

    flops: float = math.nan
    bytes: float = math.nan
    dtype: str = ""
    flops_source: str = ""  # "trace" | "shapes" | ""
    bytes_source: str = ""  # "shapes" | ""


@dataclass(frozen=True)
class _Tensor:
    shape: Shape
    size: int  # bytes per element (0 when the dtype is unknown)
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.size


def _tensors(dims_text: str, types_text: str) -> list[_Tensor | None]:
    """One entry per input: a tensor (shape, element size, dtype name), or None for a scalar,
    a list or an absent input."""
    try:
        dims = json.loads(dims_text) if dims_text else []
        types = json.loads(types_text) if types_text else []
    except ValueError:
        return []
    if not isinstance(dims, list):
        return []
    out: list[_Tensor | None] = []
    for i, shape in enumerate(dims):
        dtype = types[i] if isinstance(types, list) and i < len(types) else ""
        dtype = dtype if isinstance(dtype, str) else ""
        is_tensor = isinstance(shape, list) and all(isinstance(d, int) for d in shape)
        if not is_tensor or dtype in ("", "Scalar", "ScalarList", "TensorList", "GenericList"):
            out.append(None)
            continue
        out.append(_Tensor([int(d) for d in shape], DTYPE_BYTES.get(dtype, 0), dtype))
    return out


def _broadcast(shapes: list[Shape]) -> Shape:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            out[i] = max(out[i], d) if d != 1 else out[i]
    return out


def _at(ts: list[_Tensor | None], *idx: int) -> list[_Tensor] | None:
    picked = [ts[i] if i < len(ts) else None for i in idx]
    if any(t is None for t in picked):
        return None
    return [t for t in picked if t is not None]


def _dtype_of(t: _Tensor) -> str:
    return PEAK_DTYPE.get(t.dtype, "")


# --- matrix products -----------------------------------------------------------------------

def _gemm(a: _Tensor, b: _Tensor, bias: _Tensor | None = None) -> Cost | None:
    """a [..., M, K] @ b [..., K, N] with broadcast batch dims (1-d operands as in matmul)."""
    sa, sb = list(a.shape), list(b.shape)
    if not sa or not sb:
        return None
    sa = [1, *sa] if len(sa) == 1 else sa
    sb = [*sb, 1] if len(sb) == 1 else sb
    m, k, n = sa[-2], sa[-1], sb[-1]
    if sb[-2] != k:
        return None
    batch = math.prod(_broadcast([sa[:-2], sb[:-2]]))
    out_bytes = batch * m * n * a.size
    moved = a.nbytes + b.nbytes + out_bytes + (bias.nbytes if bias else 0)
    return Cost(flops=float(2 * batch * m * n * k), bytes=float(moved), dtype=_dtype_of(a),
                flops_source="shapes", bytes_source="shapes")


def _mm(ts: list[_Tensor | None]) -> Cost | None:
    ab = _at(ts, 0, 1)
    return _gemm(*ab) if ab else None


def _addmm(ts: list[_Tensor | None]) -> Cost | None:  # addmm / baddbmm: (self, m1, m2)
    ab = _at(ts, 1, 2)
    return _gemm(ab[0], ab[1], ts[0]) if ab else None


def _linear(ts: list[_Tensor | None]) -> Cost | None:  # input [..., in], weight [out, in]
    xw = _at(ts, 0, 1)
    if not xw or len(xw[1].shape) != 2:
        return None
    x, w = xw
    weight_t = _Tensor([w.shape[1], w.shape[0]], w.size, w.dtype)
    return _gemm(x, weight_t, ts[2] if len(ts) > 2 else None)


def _conv(ts: list[_Tensor | None]) -> Cost | None:
    """input [N, C, *spatial], weight [Cout, C/groups, *kernel]; output spatial = input's."""
    xw = _at(ts, 0, 1)
    if not xw:
        return None
    x, w = xw
    if len(x.shape) < 3 or len(w.shape) != len(x.shape) or w.shape[1] == 0:
        return None
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    cout, c_per_group, kernel = w.shape[0], w.shape[1], w.shape[2:]
    if c % c_per_group:
        return None
    out_numel = n * cout * math.prod(spatial)
    flops = 2 * out_numel * c_per_group * math.prod(kernel)
    moved = x.nbytes + w.nbytes + out_numel * x.size
    return Cost(flops=float(flops), bytes=float(moved), dtype=_dtype_of(x),
                flops_source="shapes", bytes_source="shapes")


def _conv_backward(ts: list[_Tensor | None]) -> Cost | None:
    """convolution_backward(grad_output, input, weight, ...): the input and weight gradients,
    each a forward's FLOPs over grad_output's (the real output's) size."""
    gxw = _at(ts, 0, 1, 2)
    if not gxw:
        return None
    grad, x, w = gxw
    if len(x.shape) < 3 or len(w.shape) != len(x.shape) or len(grad.shape) != len(x.shape):
        return None
    flops = 2 * 2 * grad.numel * w.shape[1] * math.prod(w.shape[2:])
    moved = 2 * grad.nbytes + 2 * x.nbytes + 2 * w.nbytes  # read each, write two gradients
    return Cost(flops=float(flops), bytes=float(moved), dtype=_dtype_of(x),
                flops_source="shapes", bytes_source="shapes")


def _attention(layout: str, backward: bool = False
               ) -> Callable[[list[_Tensor | None]], Cost | None]:
    """SDPA forward: q [B, H, Lq, E], k [B, H, Lkv, E], v [B, H, Lkv, Ev] ("bhsd"), or
    [B, L, H, E] ("bshd": the flash / efficient kernels' own layout). Backward ops take
    (grad_out, q, k, v, ...) and count 2.5x the forward (FlashAttention's count: the two
    products recomputed or reused, plus the gradients of q, k, v and the scores)."""
    first = 1 if backward else 0

    def cost(ts: list[_Tensor | None]) -> Cost | None:
        qkv = _at(ts, first, first + 1, first + 2)
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
        return Cost(flops=float(flops), bytes=float(moved), dtype=_dtype_of(q),
                    flops_source="shapes", bytes_source="shapes")

    return cost


# --- memory-bound ops ---------------------------------------------------------------------

def _elementwise(ts: list[_Tensor | None], inplace: bool) -> Cost | None:
    tensors = [t for t in ts if t is not None]
    if not tensors or tensors[0].size == 0:
        return None
    first = tensors[0]
    out_numel = math.prod(_broadcast([t.shape for t in tensors]))
    read = sum(t.nbytes for t in tensors)
    written = first.nbytes if inplace else out_numel * first.size
    return Cost(flops=float(out_numel), bytes=float(read + written), dtype=_dtype_of(first),
                flops_source="shapes", bytes_source="shapes")


def _reduction(ts: list[_Tensor | None]) -> Cost | None:
    first = ts[0] if ts else None
    if first is None or first.size == 0:
        return None
    return Cost(flops=float(first.numel), bytes=float(first.nbytes), dtype=_dtype_of(first),
                flops_source="shapes", bytes_source="shapes")


def _copy(ts: list[_Tensor | None]) -> Cost | None:  # copy_(self, src): read src, write self
    pair = _at(ts, 0, 1)
    if not pair:
        return None
    dst, src = pair
    return Cost(flops=0.0, bytes=float(dst.nbytes + src.nbytes), dtype=_dtype_of(dst),
                flops_source="shapes", bytes_source="shapes")


def _fill(ts: list[_Tensor | None]) -> Cost | None:  # write only
    first = ts[0] if ts else None
    if first is None:
        return None
    return Cost(flops=0.0, bytes=float(first.nbytes), dtype=_dtype_of(first),
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
_GEMMS: dict[str, Callable[[list[_Tensor | None]], Cost | None]] = {
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


def _rule(name: str) -> Callable[[list[_Tensor | None]], Cost | None] | None:
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


def op_cost(name: str, dims_text: str, types_text: str, recorded_flops: float = math.nan
            ) -> Cost:
    """FLOPs, bytes and dtype of one op; the trace's ``flops`` replaces the shape estimate."""
    rule = _rule(name)
    found = rule(_tensors(dims_text, types_text)) if rule else None
    cost = found or Cost()
    if math.isfinite(recorded_flops):
        return Cost(flops=float(recorded_flops), bytes=cost.bytes, dtype=cost.dtype,
                    flops_source="trace", bytes_source=cost.bytes_source)
    return cost


def op_costs(ops: pd.DataFrame) -> pd.DataFrame:
    """``op_cost`` for every row of ``ops`` (columns ``name``, ``input_dims``,
    ``input_types``, ``flops``), computed once per distinct row; same index as ``ops``."""
    cols = ["flops", "bytes", "dtype", "flops_source", "bytes_source"]
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c in ("flops", "bytes") else object)
                             for c in cols}, index=ops.index)
    types = ops["input_types"] if "input_types" in ops else pd.Series("", index=ops.index)
    keys = pd.DataFrame({
        "name": ops["name"].astype(object).fillna("").astype(str),
        "dims": ops["input_dims"].astype(object).fillna("").astype(str),
        "types": types.astype(object).fillna("").astype(str),
        "flops": ops["flops"].astype(float).fillna(-1.0),
    })
    codes, unique = pd.factorize(pd.MultiIndex.from_frame(keys), sort=False)
    costs = [op_cost(n, d, t, f if f >= 0 else math.nan) for n, d, t, f in unique]
    table = pd.DataFrame([[getattr(c, k) for k in cols] for c in costs], columns=cols)
    out = table.iloc[codes].reset_index(drop=True)
    out.index = ops.index
    out["flops"] = out["flops"].astype(np.float64)
    out["bytes"] = out["bytes"].astype(np.float64)
    return out
