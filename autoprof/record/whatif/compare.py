"""Do a fix's outputs match the original's? Tolerances follow the least precise dtype involved.

Each tensor is compared elementwise against the original's scale: an element matches when
``|fixed - original| <= tol * (|original| + max|original|)``, ``tol`` from ``TOLERANCE`` for
the least precise floating dtype among the two outputs and the fix's compute dtype (bf16
autocast of a float32 function is judged at bf16's tolerance, a float32 compile at float32's).
Integer and bool tensors must be equal; NaNs must sit at the same places.

| original | fixed | tol | matches |
| --- | --- | --- | --- |
| float32 `[1.0, 2.0]` | float32 `[1.0, 2.00001]` | 1e-4 | yes |
| float32 `[0.25]` | bf16 autocast `[1.25]` | 3e-2 | no (max_abs_error 1.0) |
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# per dtype name: relative tolerance against the output's own scale
TOLERANCE = {
    "float64": 1e-7,
    "float32": 1e-4,
    "complex64": 1e-4,
    "complex128": 1e-7,
    "float16": 5e-3,
    "bfloat16": 3e-2,
}
_PRECISION_ORDER = ["bfloat16", "float16", "float32", "complex64", "float64", "complex128"]


@dataclass(frozen=True)
class Comparison:
    match: bool
    max_abs_error: float | None
    tolerance: float | None
    problem: str | None = None  # why they do not match when it is not a number


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _loosest(names: list[str]) -> str | None:
    known = [n for n in names if n in _PRECISION_ORDER]
    return min(known, key=_PRECISION_ORDER.index) if known else None


def compare_outputs(original: Any, fixed: Any, compute_dtype: str | None = None) -> Comparison:
    """Compare two outputs of the same structure (tensors, numbers, lists, tuples, dicts)."""
    errors: list[float] = []
    tols: list[float] = []
    problem = _walk(original, fixed, compute_dtype, errors, tols, "output")
    worst = max(errors) if errors else None
    tol = max(tols) if tols else None
    return Comparison(problem is None, worst, tol, problem)


def _walk(a: Any, b: Any, compute: str | None, errors: list[float], tols: list[float],
          where: str) -> str | None:
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{where}: a tensor on one side, {type(b).__name__} on the other"
        return _tensors(a, b, compute, errors, tols, where)
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
            return f"{where}: different keys"
        for k in a:
            found = _walk(a[k], b[k], compute, errors, tols, f"{where}[{k!r}]")
            if found:
                return found
        return None
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        if not (isinstance(a, list | tuple) and isinstance(b, list | tuple)) or len(a) != len(b):
            return f"{where}: different structure"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _walk(x, y, compute, errors, tols, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, float) or isinstance(b, float):
        return _tensors(torch.tensor(float(a)), torch.tensor(float(b)), compute, errors, tols,
                        where)
    return None if a == b else f"{where}: {a!r} != {b!r}"


def _tensors(a: Any, b: Any, compute: str | None, errors: list[float], tols: list[float],
             where: str) -> str | None:
    import torch

    if tuple(a.shape) != tuple(b.shape):
        return f"{where}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    x, y = a.detach().cpu(), b.detach().cpu()
    if not (x.is_floating_point() or x.is_complex() or y.is_floating_point() or y.is_complex()):
        equal = bool((x == y).all())
        errors.append(0.0 if equal else float((x.double() - y.double()).abs().max()))
        return None if equal else f"{where}: integer values differ"
    names = [dtype_name(x.dtype), dtype_name(y.dtype)] + ([compute] if compute else [])
    tol = TOLERANCE[_loosest(names) or "float32"]
    tols.append(tol)
    wide = torch.complex128 if x.is_complex() or y.is_complex() else torch.float64
    x64, y64 = x.to(wide), y.to(wide)
    nan_x, nan_y = x64.isnan(), y64.isnan()
    if not bool((nan_x == nan_y).all()):
        errors.append(math.inf)
        return f"{where}: NaNs at different places"
    same = (x64 == y64) | nan_x  # equal infinities are equal, not inf - inf = nan apart
    diff = torch.where(same, torch.zeros_like(x64.real), (x64 - y64).abs())[~nan_x]
    if diff.numel() == 0:
        errors.append(0.0)
        return None
    finite = x64.abs()[~nan_x & x64.isfinite()]
    scale = float(finite.max()) if finite.numel() else 0.0
    errors.append(float(diff.max()))
    magnitude = torch.where(x64.isfinite(), x64.abs(), torch.zeros_like(x64.real))
    allowed = tol * (magnitude[~nan_x] + scale)  # an infinity must be matched exactly
    if bool((diff <= allowed).all()):
        return None
    return f"{where}: values differ beyond tolerance (max abs error {float(diff.max()):.3g})"
