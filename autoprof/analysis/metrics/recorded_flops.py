"""torch's own FLOP count for the few ops its profiler counts (``computeFlops`` in
torch/csrc/profiler/util.cpp), for traces recorded without ``with_flops``: the ops table's
``flops`` where the trace has none. metrics/flops.py models many more ops for the roofline."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.stats import factorized, isin_mask


def event_flops(events: pd.DataFrame) -> np.ndarray:
    """``flops`` per event, estimated from ``input_dims`` where the trace recorded none."""
    flops = events["flops"].to_numpy(dtype=np.float64).copy()
    named = isin_mask(events["name"], _FLOPS_INPUTS)
    todo = np.flatnonzero(np.isnan(flops) & named)
    if len(todo) == 0:
        return np.asarray(flops)
    # one estimate per distinct (name, input_dims), found from the columns' codes
    name_code, names = factorized(events["name"])
    dims_code, dims = factorized(events["input_dims"])
    pair = name_code[todo].astype(np.int64) * (len(dims) + 1) + dims_code[todo]
    codes, unique = pd.factorize(pair, sort=False)
    estimate = np.array([_torch_flops(_text(names[p // (len(dims) + 1)]),
                                      _text(dims[p % (len(dims) + 1)])) for p in unique.tolist()],
                        dtype=np.float64)
    flops[todo] = estimate[codes]
    return np.asarray(flops)


def _text(value: object) -> str:
    """A name or input_dims as text ("" for NA, as ``astype(object).fillna("")`` gives)."""
    return "" if pd.isna(value) else str(value)


# torch/csrc/profiler/util.cpp saveExtraArgs: which inputs each formula reads.
_FLOPS_INPUTS = {
    "aten::mm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::bmm": (0, 1),
    "aten::baddbmm": (1, 2),
    "aten::mul": (0,),
    "aten::add": (0,),
}


def _torch_flops(name: str, input_dims: str) -> float:
    """torch's computeFlops for one event, from its recorded input dims (NaN if unreadable)."""
    try:
        dims = json.loads(input_dims)
        shapes = [[int(d) for d in dims[i]] for i in _FLOPS_INPUTS[name]]
    except (ValueError, TypeError, IndexError, KeyError):
        return math.nan
    if len(shapes) == 1:  # elementwise: one op per element of the first input
        return float(math.prod(shapes[0]))
    mat1, mat2 = shapes
    if not mat1 or mat1[-1] == 0 or (name.endswith("bmm") and mat1[0] == 0):
        return 0.0
    batch = mat1[0] if name.endswith("bmm") else 1
    return float(2 * math.prod(mat1) // mat1[-1] // batch * math.prod(mat2))
