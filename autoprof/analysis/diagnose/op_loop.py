"""`python_loop`: a Python loop of tiny ops, offered as one vectorised op over the batch.

A loop such as `[r / r.norm() for r in x]` issues the same short op sequence once per item:
each op moves a few KiB and costs a launch and the framework's dispatch, so the step is the
host's, and the GPU idles. A CUDA graph replays those launches faster, but the ops stay; one
op over the whole batch (`x / x.norm(dim=1, keepdim=True)`) removes them:

| step's outermost ops | found as |
| --- | --- |
| `unbind`, (`norm`, `div`) x 256, `stack`, `matmul` | the loop `norm > div`, 256 times |

- evidence: in a profiled step, the outermost `aten::` ops of one thread (none inside another
  op, none inside the optimizer's step: that is `optimizer_ops`') repeat a sequence of at most
  MAX_PERIOD ops at least MIN_REPEATS times back to back, each op's largest input at most
  SMALL_ELEMENTS elements (SMALL_ELEMENTS_GPU on a run with GPU work); the op that splits the
  batch into items just before it (`unbind`, `split`, `chunk`) and the one that gathers the
  results just after (`stack`, `cat`) belong to the loop, and one of them, or an op taking an
  item in the body (`select`, `slice`, `index`, `narrow`: `x[i]`), must be there: a loop over
  items. A chain of one op applied again and again to its own result (`x = x * c`, 6000 times a
  step in the H200's mem_churn recording) is not one, since no batch dimension holds its
  iterations. A body of up to MAX_PERIOD = 48 ops is looked for (the H100 forecaster's crop,
  scale and noise per window is `slice > mul > randn_like > mul > add`: five; the fresh set's
  NT-Xent anchor nine, its greedy NMS 42). The same body run again elsewhere in the step, at
  least MIN_RUN_REPEATS times back to back, is the same inner loop run by an outer one (greedy
  NMS once per image) and goes with it. A loop inside a DataLoader's fetch is the samples of a
  per-sample dataset: `per_sample_loader`'s (batched_loader.py), not this one;
- fix: `vectorise`, one op sequence over the batch; `where` names the sequence's first op
  (the report adds its line);
- backward: a loop that autograd records adds nodes to the graph for each item, and
  `backward()` runs each, as many ops again; vectorising removes them too. They are found by
  their sequence numbers (op_loop_backward.py): the nodes whose `seq_nr` a forward row inside
  the loop carries;
- gain: such a step is the host's, each op costing about the same at the program's own pace
  (a launch and the framework's dispatch; the profiler inflates some ops far more than
  others, so their profiled times are not used): the untraced call (else the profiled step)
  is shared equally among its outermost ops, the backward's included, and after the fix it
  holds the ops outside the loop and its nodes, and one iteration's of each for each run of
  it (the vectorised body), no less than the GPU time of the work launched outside them;
  the untraced time between calls is added to both sides. `predicted_speedup` is the
  median over the steps.

Measured: on the H100 catalogue's row loop (256 rows of 512, then a matmul; no backward) this
predicts 147x against 136x measured without the profiler (+8%), ranked above the CUDA graph
(7.2x); none of the catalogue's eight other H100 programs fires it (an Adam over 192
parameters with foreach=False included: its per-parameter ops are the optimizer's). On the
H100 per-sample loss loop (128 `cross_entropy` calls on 1-row slices, then `backward()`)
51x against 55x measured (-8%); it was 11.7x (-79%) before the backward's nodes were counted,
its floor then the GPU time of the loop's own backward kernels. Two development programs, so
the interval is at least PREDICTION_ERROR either way (a measured gain between 2/3 and twice
the estimate), wider than the pooled model-error band (error_band.py). A third, the H100
forecaster (128 windows augmented in a loop before a 2-layer LSTM's training step), shows the
model's known limit: 5.2x against 2.86x measured (+82%, outside): the equal share gives the
step's 33 other ops 0.3 ms (the optimizer's step, not an outermost op, none) and the floor is
their GPU work, 1.3 ms, where the vectorised step measured 2.2 ms without the profiler: the
host cost of heavy ops after a loop (cuDNN's LSTM forward and backward, Adam) is
under-counted, and neither their profiled times nor a per-event profiler cost gave a rule
that also held the two programs above. The next H100 set's mask paste (40 ops a detection,
24 detections of 4 images, each writing a 320x320 image: over SMALL_ELEMENTS) was not found
when judged blind (its CUDA graph, 2.90x against 4.45x, came first); with
SMALL_ELEMENTS_GPU it reads 19.8x against 22.3x measured (-11%), now a development program.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.op_loop_backward import loop_backward, node_positions
from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME
from autoprof.analysis.metrics._tree import parent_positions
from autoprof.analysis.metrics.replay.baseline import Reference
from autoprof.analysis.metrics.stats import (
    cpu_mask,
    factorized,
    name_matches,
    sorted_distinct,
)

MAX_PERIOD = 48  # the longest op sequence a loop body is looked for as (module doc)
MIN_REPEATS = 16  # fewer iterations are not worth a finding of their own
MIN_RUN_REPEATS = 2  # the same body run again by an outer loop: at least this many times
SMALL_ELEMENTS = 65536  # a CPU op over more elements is not launch-bound
# on a GPU, 2^20 fp32 elements read and written (8 MiB) take 2.5 us at an H100's 3.35 TB/s,
# about one launch's host cost: a loop's ops up to that size are still launch-bound (the
# next set's mask paste writes 320x320 images a detection)
SMALL_ELEMENTS_GPU = 1 << 20
PREDICTION_ERROR = 0.5  # two programs measured (module doc): 2/3 to twice the estimate
SPLITS = ("aten::unbind", "aten::split", "aten::chunk", "aten::split_with_sizes")
GATHERS = ("aten::stack", "aten::cat")
ITEM_OPS = frozenset({"aten::select", "aten::slice", "aten::index", "aten::narrow"})
_OP = "aten::"
_OPTIMIZER = "Optimizer."
_LOOP_COLUMNS = ["name", "parent", "depth", "ts_us", "end_us", "step", "tid", "input_dims",
                 "seq_nr"]
_TREE_COLUMNS = ["name", "parent", "depth"]  # what finding the outermost ops reads
_SCAN_COLUMNS = ["name", "step", "tid", "ts_us", "end_us", "input_dims"]  # what the scan reads


def _outermost(host: pd.DataFrame) -> np.ndarray:
    """Mask of `host`'s `aten::` rows with no `aten::` op and no optimizer step above."""
    codes, uniques = factorized(host["name"])  # each distinct name tested once
    texts = [str(u) for u in uniques]
    is_op = np.array([t.startswith(_OP) for t in texts], dtype=bool)[codes]
    blocks = is_op | np.array([t.startswith(_OPTIMIZER) for t in texts], dtype=bool)[codes]
    parent = parent_positions(host)
    depth = host["depth"].to_numpy()
    blocked = np.zeros(len(host), dtype=bool)
    for level in sorted_distinct(depth):  # parents first: a level at a time
        rows = np.flatnonzero((depth == level) & (parent >= 0))
        up = parent[rows]
        blocked[rows] = blocks[up] | blocked[up]
    return np.asarray(is_op & ~blocked, dtype=bool)


def small_inputs(dims: Any, limit: int = SMALL_ELEMENTS) -> bool:
    """Whether every tensor input in `dims` (a list of shapes, or its JSON text as the trace
    gives it) has at most `limit` elements; False when no shape is known (no list, or an empty
    one). An argument recorded as `[]` (a number, or a 0-d tensor such as the `0` that
    Python's `sum` starts from) holds at most one element; a list of tensors (`torch.cat`'s,
    recorded as a list of shapes) is each of its tensors."""
    if isinstance(dims, str):
        try:
            dims = json.loads(dims)
        except ValueError:
            return False
    if not isinstance(dims, list | tuple) or not dims:
        return False
    shapes = [d for d in dims if isinstance(d, list | tuple) and len(d)]
    shapes = [s for d in shapes for s in (d if isinstance(d[0], list | tuple) else [d])]
    try:
        return all(math.prod(int(v) for v in s) <= limit for s in shapes)
    except (TypeError, ValueError):
        return False  # a shape that is not a list of sizes: not known


def _longest_repeat(names: np.ndarray) -> tuple[int, int, int]:
    """(start, period, repeats) of the longest back-to-back repetition of a sequence of at most
    MAX_PERIOD names (any array of comparable values: the names' codes); the shortest period
    on ties; repeats 0 when none."""
    best = (0, 0, 0)
    arr = np.asarray(names)
    for period in range(1, MAX_PERIOD + 1):
        if len(arr) <= period:
            break
        same = np.append(arr[period:] == arr[:-period], False)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], same.astype(np.int8), [0]])))
        for start, end in zip(edges[::2], edges[1::2], strict=True):
            repeats = (end - start) // period + 1
            if repeats > best[2]:
                best = (int(start), period, int(repeats))
    return best


class _Shapes:
    """A column's values by position, kept as codes into its distinct values:
    ``distinct(rows)`` is ``{column.tolist()[i] for i in rows}``."""

    def __init__(self, column: pd.Series) -> None:
        if isinstance(column.dtype, pd.CategoricalDtype):  # the loader's: its own codes
            codes, uniques = factorized(column)
            self._codes: np.ndarray = codes
            self._values: list[Any] = uniques.tolist()
        else:  # shapes as lists (unhashable, so not factorized): each row its own code
            self._values = column.tolist()
            self._codes = np.arange(len(self._values))

    def distinct(self, rows: np.ndarray) -> set[Any]:
        return {self._values[c] for c in set(self._codes[rows].tolist())}


class _Steps:
    """One thread's outermost ops of each step, read as arrays (names by their codes), with
    what depends on their names and shapes alone found once per distinct op sequence and
    shape text (a step repeats the ops of the steps before it)."""

    def __init__(self, ops: pd.DataFrame, small_limit: int) -> None:
        self.small_limit = small_limit  # the most elements an op of a loop's body takes
        codes, uniques = factorized(ops["name"])
        self.codes = np.asarray(codes, dtype=np.int64)
        self.texts: list[str] = [str(u) for u in uniques]
        # arrays, not lists: a step reads two of them (a list holds a float object per op)
        self.ts_us: np.ndarray = ops["ts_us"].to_numpy(float)
        self.end_us: np.ndarray = ops["end_us"].to_numpy(float)
        # the shapes as codes into their distinct texts: a list of every op's text would
        # build a Python object per row (~65 ms at 1M events) for the few a loop reads
        self.dims = _Shapes(ops["input_dims"]) if "input_dims" in ops.columns else None
        self._repeats: dict[bytes, tuple[int, int, int]] = {}
        self._small: dict[Any, bool] = {}

    def repeat(self, codes: np.ndarray) -> tuple[int, int, int]:
        """`_longest_repeat(codes)`, once per distinct sequence."""
        key = codes.tobytes()
        if key not in self._repeats:
            self._repeats[key] = _longest_repeat(codes)
        return self._repeats[key]

    def small(self, dims: Any) -> bool:
        """`small_inputs(dims)`, once per distinct shape text."""
        if dims not in self._small:
            self._small[dims] = small_inputs(dims, self.small_limit)
        return self._small[dims]


def _loop_in_step(steps: _Steps, at: np.ndarray) -> dict[str, Any] | None:
    """The loop in one step's outermost ops (`at`: their positions in `steps`, one thread, in
    time order), or None: its body, repeats, the ops it spans (`loop_ops`, the split and
    gather included), the ops of the thread (`ops`) and the span's start and end."""
    codes = steps.codes[at]
    start, period, repeats = steps.repeat(codes)
    if repeats < MIN_REPEATS:
        return None
    end = start + period * repeats  # one past the loop's last op
    if steps.dims is not None and \
            not all(steps.small(d) for d in steps.dims.distinct(at[start:end])):
        return None

    def name(i: int) -> str:
        return steps.texts[int(codes[i])]

    body = [name(i) for i in range(start, start + period)]
    first = start - 1 if start > 0 and name(start - 1) in SPLITS else start
    last = end if end < len(codes) and name(end) in GATHERS else end - 1
    if first == start and last == end - 1 and not ITEM_OPS & set(body):
        return None  # nothing takes the items apart or puts them together: a chain
    runs = _other_runs(codes, codes[start:start + period], (first, last))
    spans = [(first, last)] + [(a, a + period * n - 1) for a, n in runs]
    return {"body": body, "repeats": repeats + sum(n for _, n in runs), "runs": len(spans),
            "loop_ops": sum(b - a + 1 for a, b in spans), "ops": len(codes),
            "ts_us": float(steps.ts_us[int(at[min(a for a, _ in spans)])]),
            "end_us": float(steps.end_us[int(at[max(b for _, b in spans)])])}


def _other_runs(codes: np.ndarray, body: np.ndarray, found: tuple[int, int]
                ) -> list[tuple[int, int]]:
    """(start, repeats) of each other back-to-back run of `body` in `codes` (at least
    MIN_RUN_REPEATS of it, outside the `found` run's positions): the same inner loop run
    again by an outer one (greedy NMS's loop over kept boxes, once per image)."""
    period = len(body)
    if len(codes) < period * MIN_RUN_REPEATS:
        return []
    windows = np.lib.stride_tricks.sliding_window_view(codes, period)
    at = np.flatnonzero((windows == body).all(axis=1))
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(at):
        n = 1
        while i + n < len(at) and at[i + n] == at[i] + n * period:
            n += 1
        begin = int(at[i])
        if n >= MIN_RUN_REPEATS and not found[0] <= begin <= found[1]:
            runs.append((begin, n))
        i += n
    return runs


def _within(mask: np.ndarray, sub: np.ndarray) -> np.ndarray:
    """Mask of the rows of `mask` that `sub` (a mask over `mask`'s rows) selects."""
    out = np.zeros(len(mask), dtype=bool)
    out[np.flatnonzero(mask)[sub]] = True
    return out


def _in_fetch(fetches: pd.DataFrame, tid: Any, ts_us: float) -> bool:
    """Whether `ts_us` on thread `tid` lies inside one of the DataLoader `fetches` rows."""
    mine = fetches[(fetches["tid"] == tid).to_numpy()]
    start = mine["ts_us"].to_numpy(float)
    return bool(((start <= ts_us) & (ts_us <= mine["end_us"].to_numpy(float))).any())


def _loops(events: pd.DataFrame) -> dict[int, dict[str, Any]]:
    """Each profiled step's loop (the longest over its threads), by step, with the backward
    its iterations add (`backward`: op_loop_backward.py). The body's ops take at most
    SMALL_ELEMENTS_GPU elements on a run with GPU work, SMALL_ELEMENTS on a CPU-only one."""
    gpu = "is_gpu_work" in events.columns and bool(events["is_gpu_work"].to_numpy(bool).any())
    columns = [c for c in _LOOP_COLUMNS if c in events.columns]
    in_host = cpu_mask(events) & (events["step"] >= 0).to_numpy()
    # the nesting alone for the scan; the loop's columns only for the rows it reads
    tree = events.loc[in_host, _TREE_COLUMNS]
    outer = _outermost(tree)
    fetches = events.loc[_within(in_host, name_matches(tree["name"], DATA_LOADER_NAME)),
                         ["tid", "ts_us", "end_us"]]
    del tree
    ops = events.loc[_within(in_host, outer), [c for c in _SCAN_COLUMNS if c in columns]]
    if not ops["ts_us"].is_monotonic_increasing:  # one rank's rows are already in time order
        ops = ops.sort_values("ts_us", kind="stable")
    steps = _Steps(ops, SMALL_ELEMENTS_GPU if gpu else SMALL_ELEMENTS)
    groups = ops.groupby(["step", "tid"], sort=True).indices
    out: dict[int, dict[str, Any]] = {}
    for (step, tid), at in sorted(groups.items(), key=lambda kv: kv[0]):
        found = _loop_in_step(steps, at)
        if found is not None and _in_fetch(fetches, tid, found["ts_us"]):
            continue  # a DataLoader's samples: batched_loader.py's
        if found is not None and found["loop_ops"] > out.get(int(step), {}).get("loop_ops", 0):
            out[int(step)] = {**found, "tid": tid}
    if out:
        host = events.loc[in_host, columns]
        node = node_positions(host)
        by_step = host.groupby("step", sort=False).indices
        for step, loop in out.items():
            loop["backward"] = loop_backward(host, outer, node, by_step[step], loop)
    return out


def _gpu_outside_us(events: pd.DataFrame, step: int, loop: dict[str, Any]) -> float:
    """The GPU time of the step's work launched outside the loop's span and outside the
    backward nodes its iterations added."""
    gpu = events[events["is_gpu_work"].to_numpy(dtype=bool) & (events["step"] == step).to_numpy()]
    rows = gpu["launch_row"].to_numpy()
    known = np.isin(rows, events.index.to_numpy())
    launched = np.full(len(gpu), np.nan)
    launched[known] = events.loc[rows[known], "ts_us"].to_numpy(float)
    inside = (launched >= loop["ts_us"]) & (launched <= loop["end_us"])
    inside |= np.isin(rows, loop["backward"]["rows"])
    return float(gpu["dur_us"].to_numpy(float)[~inside].sum())


def _gain(loop: dict[str, Any], before_us: float, between_us: float, gpu_rest_us: float
          ) -> float:
    """One step's predicted speed-up (the module doc): `before_us` the call (or step) at the
    program's own pace, each of its outermost ops (the backward's included) costing the same
    share of it; after, the ops outside the loop and its backward, and one iteration's of
    each (the vectorised body), no less than the GPU time outside them; `between_us` the time
    between calls, unchanged."""
    backward = loop["backward"]
    ops = loop["ops"] + backward["other_thread_ops"]
    removed = loop["loop_ops"] + backward["ops"]
    kept = loop["runs"] * (len(loop["body"]) + backward["ops"] / loop["repeats"])
    op_us = before_us / ops
    after_us = max((ops - removed + kept) * op_us, gpu_rest_us)
    return float((before_us + between_us) / (after_us + between_us))


def _pace(step_us: float, call: str | None, ref: Reference | None) -> tuple[float, float]:
    """The time to speed up and the time between calls: the untraced call and the untraced
    time between calls where the call was timed, else the mean profiled step and none."""
    if call is not None and ref is not None and ref.call_us:
        return float(ref.call_us), float(ref.between_us or 0.0)
    return step_us, 0.0


def python_loop(events: pd.DataFrame, step_us: float, call: str | None = None,
                ref: Reference | None = None) -> dict[str, Any] | None:
    """The `python_loop` opportunity with its prediction (`step_us`: the mean profiled step;
    `call` and `ref`: the call's row name and its untraced times, to predict at the program's
    own pace), or None when no step has a loop of the module doc's kind."""
    loops = _loops(events)
    steps = sorted(loops)
    if not steps or not step_us > 0:
        return None
    before_us, between_us = _pace(step_us, call, ref)
    gains = np.array([_gain(loops[s], before_us, between_us,
                            _gpu_outside_us(events, s, loops[s])) for s in steps])
    us = float(np.mean([loops[s]["end_us"] - loops[s]["ts_us"] + loops[s]["backward"]["us"]
                        for s in steps]))
    body = loops[steps[0]]["body"]
    repeats = int(np.median([loops[s]["repeats"] for s in steps]))
    seq = " > ".join(n.removeprefix(_OP) for n in body)
    nodes = int(np.median([loops[s]["backward"]["nodes"] for s in steps]))
    backward = f" and its backward runs {nodes} autograd nodes for them" if nodes else ""
    hint = (f"a Python loop runs {seq} {repeats} times a step on small tensors{backward}, one "
            "launch per op per item: write it as one op over the batch (e.g. [r / r.norm() "
            "for r in x] as x / x.norm(dim=1, keepdim=True)); a CUDA graph would replay the "
            f"same {repeats * len(body)} launches")
    median = float(np.median(gains))
    return {"cause": "python_loop", "us_per_step": us, "pct_of_step": 100.0 * us / step_us,
            "max_speedup": max(float(gains.max()),
                               step_us / (step_us - us) if step_us > us else median),
            "where": [{"name": body[0], "us_per_step": us}], "hint": hint,
            "evidence": {"body": body, "repeats_per_step": repeats,
                         "loop_ops_per_step": int(np.median([loops[s]["loop_ops"]
                                                             for s in steps])),
                         "ops_per_step": int(np.median([loops[s]["ops"] for s in steps])),
                         "backward_nodes_per_step": nodes,
                         "backward_ops_per_step": int(np.median(
                             [loops[s]["backward"]["ops"] for s in steps]))},
            "fix": "vectorise", "predicted_speedup": median,
            "prediction_error": PREDICTION_ERROR,
            "predicted_spread": {"median": median, "q1": float(np.quantile(gains, 0.25)),
                                 "q3": float(np.quantile(gains, 0.75)),
                                 "min": float(gains.min()), "max": float(gains.max())}}
