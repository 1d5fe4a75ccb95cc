"""The work GradScaler adds to an fp16 AMP step, found from its ops: what `bf16-autocast`
removes.

`scaler.step(opt)` unscales the gradients and checks them for inf/NaN in one op,
`aten::_amp_foreach_non_finite_check_and_unscale_`, then reads the check on the host
(`found_inf.item()`: a sync, the host waiting for the whole backward pass) before it lets the
optimizer step; `scaler.update()` is `aten::_amp_update_scale_`. With bf16 autocast (the
range of fp32, no loss scaling) the scaler goes, and with it these ops and that sync:

| row | removed |
| --- | --- |
| `aten::_amp_foreach_non_finite_check_and_unscale_` | yes |
| the last `aten::item` after it, before `Optimizer.step#...` | yes (the found_inf sync) |
| `aten::_amp_update_scale_` and the cast just before it | yes |
| the casts, `reciprocal`, `full` just before the unscale | yes (the inverse scale, found_inf) |
| `aten::mul` of the loss by the scale | no: named like any op's, in the forward |

`scaler_rows_of` gives these rows; `scaler_spans` the host stretches they hold, the scaler's
Python between them included.
"""

from __future__ import annotations

import numpy as np

from autoprof.analysis.metrics.replay.changes import OPTIMIZER_STEP_PREFIX
from autoprof.analysis.metrics.replay.graph import Graph

UNSCALE = "aten::_amp_foreach_non_finite_check_and_unscale_"
UPDATE = "aten::_amp_update_scale_"
FOUND_INF_SYNC = "aten::item"
# the small ops GradScaler runs just before its unscale (inverse scale, found_inf, casts)
PREP = frozenset({"aten::to", "aten::_to_copy", "aten::reciprocal", "aten::full",
                  "aten::copy_", "aten::empty"})


def scaler_spans(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The host stretches the scaler holds (starts, ends in us): from the first of its rows
    (the module doc) to the last of each back-to-back run of them, the Python between those
    rows included (the scaler's own, in `scaler.step` and `scaler.update`)."""
    ev = g.events
    parent = np.asarray(g.row_parent, dtype=np.int64)
    names = g.names()
    ts = ev["ts_us"].to_numpy(float)
    end = ev["end_us"].to_numpy(float)
    rows = scaler_rows_of(names, ts, parent)
    starts: list[float] = []
    ends: list[float] = []
    last = -1
    for row in sorted(rows.tolist(), key=lambda r: ts[r]):
        sib = _siblings(parent, ts, row)
        joined = last >= 0 and last in sib and sib.index(row) == sib.index(last) + 1
        if joined:
            ends[-1] = max(ends[-1], float(end[row]))
        else:
            starts.append(float(ts[row]))
            ends.append(float(end[row]))
        last = row
    return np.asarray(starts), np.asarray(ends)


def _siblings(parent: np.ndarray, ts_us: np.ndarray, row: int) -> list[int]:
    """The rows under `row`'s parent (positions), in time order."""
    same = np.flatnonzero(parent == parent[row])
    return [int(r) for r in same[np.argsort(ts_us[same], kind="stable")]]


def _before(names: np.ndarray, sib: list[int], at: int, most: int) -> list[int]:
    """Up to `most` PREP rows just before position `at` of `sib`, back to back."""
    out: list[int] = []
    back = at - 1
    while back >= 0 and len(out) < most and str(names[sib[back]]) in PREP:
        out.append(sib[back])
        back -= 1
    return out


def scaler_rows_of(names: np.ndarray, ts_us: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """The scaler's rows of a table, by its names, start times and parents (positions, -1 for
    none):
    each unscale op with the run of PREP ops just before it and the last `.item()` after it
    (among its siblings) before the optimizer's step (`scaler.unscale_(opt)` called by hand,
    then `clip_grad_norm_`, puts the clipping's ops, and perhaps the user's own reads,
    between them), each update op with the cast just before it."""
    out: set[int] = set()
    for row in np.flatnonzero(np.isin(names, (UNSCALE, UPDATE))).tolist():
        sib = _siblings(parent, ts_us, row)
        at = sib.index(row)
        unscale = names[row] == UNSCALE
        out.update([row, *_before(names, sib, at, len(sib) if unscale else 1)])
        if unscale:
            out.update(_found_inf_read(names, sib, at))
    return np.asarray(sorted(out), dtype=np.int64)


def _found_inf_read(names: np.ndarray, sib: list[int], at: int) -> list[int]:
    """The FOUND_INF_SYNC that `scaler.step` makes after position `at` of `sib`: the last one
    before the `Optimizer.step#` row it runs next (the reads before it, a clipped norm's
    logged, are the user's), or the first where no step row follows (a step not labelled);
    none past the update op."""
    reads: list[int] = []
    for row in sib[at + 1:]:
        name = str(names[row])
        if name == UPDATE:
            break
        if name.startswith(OPTIMIZER_STEP_PREFIX):
            return reads[-1:]
        if name == FOUND_INF_SYNC:
            reads.append(row)
    return reads[:1]
