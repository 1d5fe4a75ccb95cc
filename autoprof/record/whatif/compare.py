"""Do a fix's outputs match the original's? Tolerances follow the least precise dtype involved.

Each tensor is compared elementwise against the original's scale: an element matches when
``|fixed - original| <= tol * (|original| + max|original|)``, ``tol`` from ``TOLERANCE`` for
the least precise floating dtype among the two outputs and the fix's compute dtype (bf16
autocast of a float32 function is judged at bf16's tolerance, a float32 compile at float32's).
Integer and bool tensors must be equal; NaNs must sit at the same places. numpy arrays are
compared like tensors (viewed through ``torch.from_numpy``, no copy); arrays of objects or
strings must be equal element by element.

Large outputs are compared in chunks of ``CHUNK_ELEMENTS`` in a working dtype no wider than
needed (the wider of the two, at least float32), so the extra memory is a few chunks, not
copies of the whole output in float64. Outputs that cannot be compared (an ``==`` that raises
or does not answer True/False, values of different kinds) give ``comparable=False`` and the
reason: the fix is timed, its outputs are reported "not compared".

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
    comparable: bool = True  # False: the outputs cannot be compared at all (problem says why)


class Incomparable(Exception):  # noqa: N818 -- an outcome: the outputs cannot be compared
    """Raised inside the walk when two outputs cannot be compared; ``str()`` is the reason."""


CHUNK_ELEMENTS = 1 << 20


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _loosest(names: list[str]) -> str | None:
    known = [n for n in names if n in _PRECISION_ORDER]
    return min(known, key=_PRECISION_ORDER.index) if known else None


def compare_outputs(original: Any, fixed: Any, compute_dtype: str | None = None) -> Comparison:
    """Compare two outputs of the same structure (tensors, numpy arrays, numbers, lists,
    tuples, dicts, dataclasses)."""
    errors: list[float] = []
    tols: list[float] = []
    try:
        problem = _walk(original, fixed, compute_dtype, errors, tols, "output")
    except Incomparable as exc:
        return Comparison(False, None, None, str(exc), comparable=False)
    worst = max(errors) if errors else None
    tol = max(tols) if tols else None
    return Comparison(problem is None, worst, tol, problem)


def _as_tensor(value: Any) -> Any:
    """A tensor view of a numeric numpy array (no copy), the array itself otherwise."""
    import sys

    np = sys.modules.get("numpy")
    if np is None or not isinstance(value, np.ndarray) or value.dtype.kind not in "biufc":
        return value
    import torch

    arr = value if all(s >= 0 for s in value.strides) else np.ascontiguousarray(value)
    try:
        return torch.from_numpy(arr)
    except TypeError:  # a dtype torch lacks (uint64 on old torch, float128): compare as is
        return value


def _walk(a: Any, b: Any, compute: str | None, errors: list[float], tols: list[float],
          where: str) -> str | None:
    import torch

    a, b = _as_tensor(a), _as_tensor(b)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{where}: a tensor on one side, {type(b).__name__} on the other"
        return _tensors(a, b, compute, errors, tols, where)
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
            return f"{where}: different keys"
        return _each([(a[k], b[k], f"{where}[{k!r}]") for k in a], compute, errors, tols)
    if _is_dataclass(a) or _is_dataclass(b):
        return _dataclasses(a, b, compute, errors, tols, where)
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        if not (isinstance(a, list | tuple) and isinstance(b, list | tuple)) or len(a) != len(b):
            return f"{where}: different structure"
        return _each([(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True))],
                     compute, errors, tols)
    if isinstance(a, float) or isinstance(b, float):
        return _tensors(torch.tensor(float(a)), torch.tensor(float(b)), compute, errors, tols,
                        where)
    return None if _equal(a, b, where) else f"{where}: {_short(a)} != {_short(b)}"


def _each(pairs: list[tuple[Any, Any, str]], compute: str | None, errors: list[float],
          tols: list[float]) -> str | None:
    for x, y, where in pairs:
        found = _walk(x, y, compute, errors, tols, where)
        if found:
            return found
    return None


def _is_dataclass(value: Any) -> bool:
    import dataclasses

    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _dataclasses(a: Any, b: Any, compute: str | None, errors: list[float], tols: list[float],
                 where: str) -> str | None:
    import dataclasses

    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} on one side, {type(b).__name__} on the other"
    names = [f.name for f in dataclasses.fields(a) if hasattr(a, f.name)]
    return _each([(getattr(a, n), getattr(b, n), f"{where}.{n}") for n in names], compute,
                 errors, tols)


def _equal(a: Any, b: Any, where: str) -> bool:
    """``a == b`` as a bool; an ``==`` that raises or answers something else is Incomparable."""
    import sys

    np = sys.modules.get("numpy")
    try:
        if np is not None and isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
        return bool(a == b)
    except Exception as exc:
        raise Incomparable(f"{where}: {type(a).__name__} outputs cannot be compared "
                           f"(== raised {type(exc).__name__}: {exc})") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _tensors(a: Any, b: Any, compute: str | None, errors: list[float], tols: list[float],
             where: str) -> str | None:
    if tuple(a.shape) != tuple(b.shape):
        return f"{where}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    x, y = _flat(a.detach()), _flat(b.detach()).to(a.device)
    if not (x.is_floating_point() or x.is_complex() or y.is_floating_point() or y.is_complex()):
        return _integers(x, y, errors, where)
    names = [dtype_name(x.dtype), dtype_name(y.dtype)] + ([compute] if compute else [])
    tol = TOLERANCE[_loosest(names) or "float32"]
    tols.append(tol)
    work = _work_dtype(x.dtype, y.dtype)
    scale = 0.0
    for xc, yc in _chunks(x, y, work):
        if not bool((xc.isnan() == yc.isnan()).all()):
            errors.append(math.inf)
            return f"{where}: NaNs at different places"
        finite = xc.abs()[xc.isfinite()]
        if finite.numel():
            scale = max(scale, float(finite.max()))
    worst, ok = 0.0, True
    for xc, yc in _chunks(x, y, work):
        diff, allowed = _diff(xc, yc, tol, scale)
        if diff.numel():
            worst = max(worst, float(diff.max()))
            ok = ok and bool((diff <= allowed).all())
    errors.append(worst)
    if ok:
        return None
    return f"{where}: values differ beyond tolerance (max abs error {worst:.3g})"


def _flat(t: Any) -> Any:
    """A 1-D view of ``t`` (a copy only when its strides allow no view)."""
    return t.reshape(-1)


def _work_dtype(a: Any, b: Any) -> Any:
    """The dtype chunks are compared in: the wider of the two, at least float32 (complex64)."""
    import torch

    wide = torch.promote_types(a, b)
    floor = torch.complex64 if wide.is_complex else torch.float32
    return torch.promote_types(wide, floor)


def _chunks(x: Any, y: Any, work: Any) -> Any:
    for start in range(0, x.numel(), CHUNK_ELEMENTS):
        stop = start + CHUNK_ELEMENTS
        yield x[start:stop].to(work), y[start:stop].to(work)


def _diff(x: Any, y: Any, tol: float, scale: float) -> tuple[Any, Any]:
    """``|x - y|`` and what is allowed, over the elements that are not NaN. Equal values
    (infinities included) differ by 0; an infinity must be matched exactly."""
    import torch

    keep = ~x.isnan()
    x, y = x[keep], y[keep]
    same = x == y
    diff = torch.where(same, torch.zeros((), dtype=x.real.dtype, device=x.device),
                       (x - y).abs())
    magnitude = torch.where(x.isfinite(), x.abs(), torch.zeros((), dtype=x.real.dtype,
                                                                 device=x.device))
    return diff, tol * (magnitude + scale)


def _integers(x: Any, y: Any, errors: list[float], where: str) -> str | None:
    worst, equal = 0.0, True
    for start in range(0, x.numel(), CHUNK_ELEMENTS):
        xc, yc = x[start:start + CHUNK_ELEMENTS], y[start:start + CHUNK_ELEMENTS]
        if not bool((xc == yc).all()):
            equal = False
            worst = max(worst, float((xc.double() - yc.double()).abs().max()))
    errors.append(worst)
    return None if equal else f"{where}: integer values differ"
