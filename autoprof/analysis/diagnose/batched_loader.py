"""`per_sample_loader`: a DataLoader that builds each batch one sample at a time in Python.

With `batch_size=B` and no `__getitems__`, a DataLoader calls `Dataset.__getitem__` B times
per batch and `default_collate` stacks the samples. Each call is Python (a pandas row, a
parse, a transform) and a few small tensor ops; for rows of a few hundred bytes that is
nearly all of the fetch. The profiler shows the fetch as its `enumerate(DataLoader)#..
__next__` span, and inside it the same ops repeated once per sample, then the collate's
`aten::stack`:

| fetch's outermost ops | found as |
| --- | --- |
| `aten::to` x128, `aten::lift_fresh` x128, ..., `aten::stack` x1 | 128 samples, 2 ops each |
| `aten::to` x2, ... (a `__getitems__` or `batch_size=None`) | nothing: no op repeats |
| `aten::select` x128 per tensor, `aten::stack` (a TensorDataset) | nothing: indexing alone |

- evidence: the profiled steps' outermost fetch spans (inside the call or between calls),
  their share of each step at least MIN_SHARE_PCT; inside the fetch an op repeated at least
  MIN_SAMPLES times and the collate's `aten::stack` / `aten::cat`. The samples per batch is
  the mode of the repeat counts of the ops repeated that often (an op done twice per sample
  reads as the same B where most are done once); the ops per sample is every outermost op
  but the collate's over it. Repeats of indexing ops alone (a TensorDataset: `select`,
  `slice`, `index`) are no Python per sample and are not this entry. In a recording with
  its Python stack the ops are found through the frames between (`_next_data`, `fetch`,
  `__getitem__`);
- fix: `batched-dataset`, a `Dataset.__getitems__(indices)` that builds the whole batch
  with one op per transform (and a collate_fn that returns it as is), or a dataset indexed
  by a batch of indices under `DataLoader(batch_size=None, sampler=BatchSampler(...))`. A
  `__getitem__` recorded with its Python stack is named;
- gain: per fetch, after = fetch / B (the Python of one sample, done once per batch) + for
  each op name under the fetch (the collate's aside) the collate's time, or the op's own
  time where less (each per-sample op becomes one op over the whole batch, which costs
  about what one pass over its data does, the stack's pass, and no more than it costs
  now: a `detach_` or `lift_fresh` per sample stays the few us it is). Each
  step's fetch share s (profiled) and r = after / fetch give 1 / (1 - s (1 - r)): the
  ratio, not the time, is carried to the untraced program, so the profiler's inflation
  cancels where it inflates the fetch and the rest alike (many small ops inflate more, so
  the estimate leans high where the samples issue many ops).

Set on one development program, `benchmarks/cpu_heldout.py`'s `pandas_rows_loader` (a row
`df.iloc[i]` per sample, batch 128): its fetch of 226 ms held 3 op names per sample and a
85 us stack, so after = 1.8 + 0.26 ms; its `__getitems__` recorded 2.0 ms a fetch. The cap
at each op's own time was added after reading the H200 truth runs' loaders (`mlp_loader_w0`:
5 ops per sample under a 1.3 ms stack, 1.3 ms of them `detach_`, `lift_fresh`, `to`), whose
batched fix was never timed. The held-out
programs are `benchmarks/cpu_loader_heldout.py` (docs/validation.md): string records parsed
per sample 1.78x against 1.23x measured (inside); images augmented per sample 1.24x against
0.31x (outside: the batched ops waited for busy cores, and the profiler inflated the fetch's
many small ops); token lists not offered (a 12% fetch). Uncalibrated beyond the one
development program: the interval is PREDICTION_ERROR either way (2/3 to twice the
estimate).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.kinds import CatalogueFixName
from autoprof.analysis.loader.vocabulary import DATA_LOADER_NAME
from autoprof.analysis.metrics.replay.replay import Spread
from autoprof.analysis.metrics.stats import cpu_mask, name_matches
from autoprof.units import fmt_us

MIN_SHARE_PCT = 20.0  # the fetch's share of the step below which it is not named
MIN_SAMPLES = 8  # an op repeated fewer times per fetch is not a per-sample op
PREDICTION_ERROR = 0.5  # one development program (module doc)
FIX: CatalogueFixName = "batched-dataset"
PYTHON_CAT = "python_function"  # a Python frame, in a recording with its stack
MAX_FRAMES = 64  # Python frames looked through between a fetch and its ops
COLLATE_OPS = frozenset({"aten::stack", "aten::cat"})
INDEX_OPS = frozenset({"aten::select", "aten::slice", "aten::index", "aten::as_strided",
                       "aten::alias", "aten::unsqueeze", "aten::view"})
HINT = ("the DataLoader builds each batch one sample at a time: {where}about {samples} "
        "samples a batch, {ops:.0f} ops and {sample} each, then default_collate stacks them; "
        "the fetch holds {pct:.0f}% of the step. Build the whole batch in one call: give the "
        "Dataset a `__getitems__(self, indices)` that slices the rows at once (df.iloc[indices], "
        "array[indices]) and applies each transform as one tensor op over the batch, with "
        "collate_fn=lambda b: b; or index a tensor with a batch of indices under "
        "DataLoader(ds, batch_size=None, sampler=BatchSampler(RandomSampler(ds), batch_size, "
        "drop_last=False)). Python work of each sample's own (parsing, decoding) stays: do it once "
        "before training. Background worker processes only move this cost onto other cores")


def _fetches(events: pd.DataFrame) -> pd.DataFrame:
    """The outermost DataLoader fetch spans of the profiled steps."""
    rows = cpu_mask(events) & (events["step"] >= 0).to_numpy() & \
        name_matches(events["name"], DATA_LOADER_NAME)  # the few fetch rows copied, no more
    fetch = events.loc[rows, ["name", "cat", "step", "dur_us", "parent", "rank"]]
    return fetch[~fetch["parent"].isin(fetch.index).to_numpy()]


def _mode(counts: list[int]) -> int:
    """The most frequent count, the smaller on a tie."""
    values, freq = np.unique(np.asarray(counts, int), return_counts=True)
    return int(values[int(np.argmax(freq))])


def _fetch_model(kids: pd.DataFrame, fetch_us: float) -> dict[str, float] | None:
    """One fetch's samples, ops per sample, collate and batched cost (module doc), or None
    where no op repeats per sample, nothing is collated, or the repeats only index."""
    collate = kids["name"].isin(COLLATE_OPS).to_numpy()
    per_sample = kids[~collate]
    counts = per_sample["name"].value_counts()
    repeated = counts[counts >= MIN_SAMPLES]
    if repeated.empty or not collate.any() or set(repeated.index) <= INDEX_OPS:
        return None
    samples = _mode([int(v) for v in repeated])
    ops = len(per_sample) / samples
    collate_us = float(kids.loc[collate, "dur_us"].sum())
    each_op_us = per_sample.groupby("name", observed=True)["dur_us"].sum().to_numpy(float)
    after = min(fetch_us / samples + float(np.minimum(each_op_us, collate_us).sum()), fetch_us)
    return {"samples": samples, "ops_per_sample": ops, "collate_us": collate_us,
            "fetch_us": fetch_us, "after_us": after}


def _under_fetch(events: pd.DataFrame, fetch: pd.DataFrame) -> pd.DataFrame:
    """The outermost ops under the fetch spans (`parent`: the span's index), through the
    Python frames a recording with its stack puts between (`_next_data`, `__getitem__`)."""
    python = (events["cat"].astype(str) == PYTHON_CAT).to_numpy()
    parent = events.index.get_indexer(events["parent"].to_numpy())
    up = parent.copy()
    for _ in range(MAX_FRAMES):
        through = up >= 0
        through[through] = python[up[through]]
        if not through.any():
            break
        up[through] = parent[up[through]]
    rows = np.isin(up, events.index.get_indexer(fetch.index)) & ~python
    kids = events.loc[rows, ["name", "dur_us"]].copy()
    kids["parent"] = events.index[up[rows]]
    return kids


def _models(events: pd.DataFrame, fetch: pd.DataFrame) -> pd.DataFrame:
    """Per fetch span (its index), the model of `_fetch_model`; spans without one left out."""
    kids = _under_fetch(events, fetch)
    groups = dict(tuple(kids.groupby("parent")))
    rows = {}
    for i, span in fetch.iterrows():
        got = _fetch_model(groups[i], float(span["dur_us"])) if i in groups else None
        if got is not None:
            rows[i] = {**got, "rank": int(span["rank"]), "step": int(span["step"])}
    return pd.DataFrame.from_dict(rows, orient="index")


def _getitem(events: pd.DataFrame) -> str | None:
    """The `__getitem__` most recorded, where the trace holds Python frames."""
    py = events[(events["cat"].astype(str) == PYTHON_CAT).to_numpy()]
    names = py["name"].astype(str)
    hits = names[names.str.endswith("__getitem__").to_numpy()]
    return str(hits.mode().iloc[0]) if len(hits) else None


def per_sample_loader(events: pd.DataFrame, steps: pd.DataFrame) -> dict[str, Any] | None:
    """The `per_sample_loader` opportunity with its prediction (`steps`: the breakdown's
    steps, `rank`, `step`, `step_us`), or None without the module doc's evidence."""
    if "parent" not in events.columns or steps.empty:
        return None
    fetch = _fetches(events)
    models = _models(events, fetch) if len(fetch) else pd.DataFrame()
    if models.empty:
        return None
    per_step = models.groupby(["rank", "step"])[["fetch_us", "after_us"]].sum()
    step_us = steps.set_index(["rank", "step"])["step_us"].astype(float)
    joined = per_step.join(step_us, how="inner")
    joined = joined[joined["step_us"].to_numpy() > 0]
    if joined.empty:
        return None
    share = np.minimum(joined["fetch_us"].to_numpy(float) / joined["step_us"].to_numpy(float),
                       1.0)
    if 100.0 * float(np.median(share)) < MIN_SHARE_PCT:
        return None
    kept = 1.0 - share * (1.0 - joined["after_us"].to_numpy(float)
                          / joined["fetch_us"].to_numpy(float))
    spread = Spread.of((1.0 / np.maximum(kept, 1e-9)).tolist())
    return _opportunity(events, fetch, models, float(np.median(share)), spread)


def _opportunity(events: pd.DataFrame, fetch: pd.DataFrame, models: pd.DataFrame,
                 share: float, spread: Spread) -> dict[str, Any]:
    n_steps = int(models.groupby(["rank", "step"]).ngroups)
    fetch_us = float(models["fetch_us"].sum()) / n_steps
    after_us = float(models["after_us"].sum()) / n_steps
    samples = int(np.median(models["samples"]))
    sample_us = float(np.median(models["fetch_us"] / models["samples"]))
    ops = float(np.median(models["ops_per_sample"]))
    name = str(fetch.loc[models.index, "name"].mode().iloc[0])
    getitem = _getitem(events)
    where = f"{getitem} runs once per sample; " if getitem else ""
    pct = 100.0 * share
    return {"cause": "per_sample_loader", "us_per_step": fetch_us - after_us,
            "pct_of_step": pct,
            "max_speedup": 1.0 / (1.0 - share) if share < 1.0 else None,
            "where": [{"name": name, "us_per_step": fetch_us}],
            "hint": HINT.format(where=where, samples=samples, ops=ops,
                                sample=fmt_us(sample_us), pct=pct),
            "evidence": {"fetch_us_per_step": round(fetch_us, 1),
                         "fetch_pct_of_step": round(pct, 1),
                         "samples_per_batch": samples, "ops_per_sample": round(ops, 2),
                         "us_per_sample": round(sample_us, 2),
                         "collate_us_per_batch": round(float(np.median(models["collate_us"])),
                                                       2),
                         "batched_fetch_us": round(after_us, 1),
                         "getitem": getitem},
            "fix": FIX, "predicted_speedup": spread.median,
            "prediction_error": PREDICTION_ERROR, "predicted_spread": spread.to_json()}
