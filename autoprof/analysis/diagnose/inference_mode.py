"""`autograd_inference`: a forward pass that autograd records although nothing calls backward.

With grad mode on, every op on a tensor that takes part in autograd builds a graph node
(`AddmmBackward0`, `TBackward0`) and saves the tensors its backward would need; the profiler
marks each such op with autograd's sequence number (`seq_nr`), which advances once per node.
Under `torch.inference_mode()` or `torch.no_grad()` no op carries one. So:

| step's ops | found as |
| --- | --- |
| `aten::linear` (0) > `aten::t` (0), `aten::addmm` (1), ..., no backward | 2 nodes a Linear |
| the same under `torch.inference_mode()` | nothing: no op has a sequence number |

- evidence: every profiled step has at least MIN_NODES distinct sequence numbers on its
  host ops, and no step runs a backward (`autograd::engine` rows, a `...Backward` node, an
  optimizer's step): the graph is built and dropped. A call whose backward runs outside the
  profiled steps (a loss taken later, elsewhere) would read the same; the hint says so;
- fix: `inference-mode`, `with torch.inference_mode():` around the call (`torch.no_grad()`
  where the outputs later meet autograd);
- gain: each node costs a fixed host time, NODE_VIEW_RATIO times the step's median view op
  (`aten::t`, `aten::view`, ...: dispatch and nothing else, so it reads the host's own pace
  under the profiler); the nodes of a step times that cost come off the untraced call (else
  the mean profiled step), no more than the share of the step the recorded ops hold and no
  lower than the step's GPU time; the untraced time between calls stays on both sides.

NODE_VIEW_RATIO was set on one recording, the H100 catalogue's 12 Linear layers of 512 on 16
rows (`tests/data/gpu_h100_catalogue/runs/inference_grad`): 24 nodes a step, 91 us a call
saved by hand (0.256 -> 0.165 ms, 1.55x): 3.8 us a node, against a median view op of 3.7
us profiled. Predicted there from the synchronised untraced call (0.395 ms): 1.29x (-17%). That
program is this entry's development case, not a test of it; the held-out CPU programs are
in benchmarks/cpu_catalogue_heldout.py (docs/validation.md). One development program: the
interval is at least PREDICTION_ERROR either way (2/3 to twice the estimate).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.kinds import CatalogueFixName
from autoprof.analysis.metrics.replay.baseline import Reference
from autoprof.analysis.metrics.stats import (
    cpu_mask,
    isin_mask,
    name_matches,
    sorted_distinct,
)

MIN_NODES = 4  # fewer graph nodes a step cost too little to name
NODE_VIEW_RATIO = 1.0  # one node's host cost over the median view op (module doc: 3.8 / 3.7)
PREDICTION_ERROR = 0.5  # one development program (module doc)
FIX: CatalogueFixName = "inference-mode"
VIEW_OPS = frozenset({"aten::t", "aten::view", "aten::transpose", "aten::as_strided",
                      "aten::expand", "aten::reshape", "aten::_reshape_alias",
                      "aten::unsqueeze", "aten::squeeze", "aten::permute", "aten::alias",
                      "aten::detach", "aten::_unsafe_view"})
BACKWARD = re.compile(r"^autograd::engine|Backward|^Optimizer\.step#|^Optimizer\.zero_grad#")
HINT = ("the step builds autograd's graph ({nodes} nodes a step) and never runs backward: "
        "wrap the call in `with torch.inference_mode():` (or torch.no_grad() where its "
        "outputs later meet autograd); if its backward runs elsewhere, outside the profiled "
        "steps, keep it")


def _host_steps(events: pd.DataFrame) -> pd.DataFrame:
    rows = cpu_mask(events) & (events["step"] >= 0).to_numpy()
    keep = [c for c in ("name", "step", "dur_us", "parent", "seq_nr") if c in events.columns]
    return events.loc[rows, keep]


def _outermost_recorded_us(host: pd.DataFrame) -> pd.Series:
    """Per step, the time of the ops with a sequence number that no other such op holds."""
    recorded = host.loc[host["seq_nr"].to_numpy() >= 0, ["parent", "step", "dur_us"]]
    inner = _in_labels(recorded["parent"].to_numpy(), recorded.index.to_numpy())
    return recorded[~inner].groupby("step")["dur_us"].sum()


def _in_labels(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``np.isin(values, labels)`` for integer row labels, by a lookup table (no hash)."""
    if not len(labels) or not len(values):
        return np.zeros(len(values), dtype=bool)
    labels = labels.astype(np.int64)
    lo, hi = int(labels.min()), int(labels.max())
    table = np.zeros(hi - lo + 1, dtype=bool)
    table[labels - lo] = True
    ok = (values >= lo) & (values <= hi)  # False for NaN
    out = np.zeros(len(values), dtype=bool)
    out[ok] = table[values[ok].astype(np.int64) - lo]
    return out


def _graph_nodes(host: pd.DataFrame) -> pd.Series:
    """Per step (ascending), the distinct sequence numbers of its ops: the autograd graph's
    nodes (a groupby's nunique, counted from the distinct (step, seq_nr) pairs)."""
    recorded = host["seq_nr"].to_numpy() >= 0
    step = host["step"].to_numpy()[recorded].astype(np.int64)
    seq = host["seq_nr"].to_numpy()[recorded].astype(np.int64)
    if not len(step):
        return pd.Series(dtype=np.int64)
    span = int(seq.max()) + 1
    pairs = pd.unique(step * span + seq)
    steps, counts = np.unique(pairs // span, return_counts=True)
    return pd.Series(counts.astype(np.int64), index=steps)


def _gpu_us(events: pd.DataFrame, n_steps: int) -> float:
    gpu = events["is_gpu_work"].to_numpy(dtype=bool) & (events["step"] >= 0).to_numpy()
    return float(events.loc[gpu, "dur_us"].sum()) / n_steps if n_steps else 0.0


def _pace(step_us: float, ref: Reference | None) -> tuple[float, float]:
    """(the step at the program's own pace, untraced over profiled): the untraced iteration
    timed after the window, else the untraced call and the least time between two, else the
    profiled step."""
    if ref is not None and ref.after_window_us:
        return float(ref.after_window_us), float(ref.after_window_us) / step_us
    if ref is not None and ref.call_us:
        untraced = float(ref.call_us) + float(ref.between_us or 0.0)
        return untraced, untraced / step_us
    return step_us, 1.0


def autograd_inference(events: pd.DataFrame, step_us: float,
                       ref: Reference | None = None) -> dict[str, Any] | None:
    """The `autograd_inference` opportunity with its prediction (`step_us`: the mean profiled
    step; `ref`: the untraced times), or None without the module doc's evidence."""
    if "seq_nr" not in events.columns or not step_us > 0:
        return None
    host = _host_steps(events)
    steps = sorted_distinct(host["step"].to_numpy())
    if not len(steps) or name_matches(host["name"], BACKWARD).any():
        return None
    nodes = _graph_nodes(host).reindex(steps, fill_value=0)
    views = host.loc[isin_mask(host["name"], VIEW_OPS), "dur_us"]
    if int(nodes.min()) < MIN_NODES or views.empty:
        return None
    recorded_us = _outermost_recorded_us(host).reindex(steps, fill_value=0.0)
    before_us, factor = _pace(step_us, ref)
    node_us = NODE_VIEW_RATIO * float(views.median())
    floor_us = _gpu_us(events, len(steps))
    gains = []
    for step in steps:
        saved = min(int(nodes[step]) * node_us, float(recorded_us[step]) * factor)
        after = max(before_us - saved, floor_us, 0.0)
        gains.append(before_us / after if after > 0 else np.inf)
    arr = np.asarray(gains, float)
    median = float(np.median(arr))
    if not np.isfinite(median):
        return None
    per_step = float(np.median(nodes.to_numpy()))
    us = per_step * node_us
    return {"cause": "autograd_inference", "us_per_step": us,
            "pct_of_step": 100.0 * us / before_us if before_us > 0 else 0.0,
            "max_speedup": before_us / (before_us - us) if before_us > us else None,
            "where": [{"name": "autograd graph nodes", "us_per_step": us}],
            "hint": HINT.format(nodes=int(per_step)),
            "evidence": {"graph_nodes_per_step": int(per_step),
                         "node_us": round(node_us, 2),
                         "view_op_us_median": round(float(views.median()), 2),
                         "backward_in_steps": False},
            "fix": FIX, "predicted_speedup": median,
            "prediction_error": PREDICTION_ERROR,
            "predicted_spread": {"median": median, "q1": float(np.quantile(arr, 0.25)),
                                 "q3": float(np.quantile(arr, 0.75)),
                                 "min": float(arr.min()), "max": float(arr.max())}}
