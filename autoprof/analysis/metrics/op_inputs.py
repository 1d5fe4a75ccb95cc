"""An op's recorded inputs as tensors: shapes from ``input_dims``, element sizes and dtypes
from ``input_types`` (metrics/flops.py counts FLOPs and bytes from them), and ``Cost``, what
one op does."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

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
class Tensor:
    shape: Shape
    size: int  # bytes per element (0 when the dtype is unknown)
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.size


def tensors(dims_text: str, types_text: str) -> list[Tensor | None]:
    """One entry per input: a tensor (shape, element size, dtype name), or None for a scalar,
    a list or an absent input."""
    try:
        dims = json.loads(dims_text) if dims_text else []
        types = json.loads(types_text) if types_text else []
    except ValueError:
        return []
    if not isinstance(dims, list):
        return []
    out: list[Tensor | None] = []
    for i, shape in enumerate(dims):
        dtype = types[i] if isinstance(types, list) and i < len(types) else ""
        dtype = dtype if isinstance(dtype, str) else ""
        is_tensor = isinstance(shape, list) and all(isinstance(d, int) for d in shape)
        if not is_tensor or dtype in ("", "Scalar", "ScalarList", "TensorList", "GenericList"):
            out.append(None)
            continue
        out.append(Tensor([int(d) for d in shape], DTYPE_BYTES.get(dtype, 0), dtype))
    return out


def broadcast(shapes: list[Shape]) -> Shape:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            out[i] = max(out[i], d) if d != 1 else out[i]
    return out


def tensors_at(ts: list[Tensor | None], *idx: int) -> list[Tensor] | None:
    picked = [ts[i] if i < len(ts) else None for i in idx]
    if any(t is None for t in picked):
        return None
    return [t for t in picked if t is not None]


def peak_dtype_of(t: Tensor) -> str:
    return PEAK_DTYPE.get(t.dtype, "")
