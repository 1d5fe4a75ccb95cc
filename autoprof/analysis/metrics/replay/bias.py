"""The bias add a GEMM could fold: an `aten::add` of a bias right after its matrix product.

`x @ w + b` records an `aten::matmul` (or `aten::mm`) of [M, K] x [K, N], then, as the next
op on the same thread under the same parent, an `aten::add` of [M, N] and [N] (or [1, N]).
`torch.addmm(b, x, w)` folds that add into the GEMM.

The rule reads the events table in one pass of array operations: the ops of one rank
ordered by (thread, parent, start, position), each op's predecessor the row before it in
that order when thread and parent match. Only the adds right after a product have their
shapes read, each distinct pair of shape texts parsed once. The replay
(`selection.bias_fold_spans`) and the summary's code-fix check (`bias_adds`) both ask this
module, the replay with the thread and parent codes its graph holds already.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from autoprof.analysis.metrics._tree import parent_positions
from autoprof.analysis.metrics.replay.graph import pair_codes, rank_rows
from autoprof.analysis.metrics.stats import factorized, isin_mask

MATMUL = "aten::matmul"
MATMULS = frozenset({MATMUL, "aten::mm"})
ADD = "aten::add"
OP_CAT = "cpu_op"
_DIMS = re.compile(r"\[([\d, ]*)\]")


def shapes_of(dims: str) -> list[tuple[int, ...]]:
    """The input shapes of an op's `input_dims` text, in order ([] for a scalar)."""
    return [tuple(int(v) for v in m.split(",") if v.strip()) for m in _DIMS.findall(dims)]


def op_positions(events: pd.DataFrame) -> np.ndarray:
    """Positions of the op rows (`cat` cpu_op) of `events`."""
    return np.flatnonzero(isin_mask(events["cat"], (OP_CAT,)))


def previous_op(ops: np.ndarray, ts_us: np.ndarray, thread: np.ndarray,
                parent: np.ndarray) -> np.ndarray:
    """For each op of `ops` (positions, ascending), the position of the op before it on its
    thread under its parent, by start then position (-1: none)."""
    order = np.lexsort((ops, ts_us, parent, thread))
    same = (thread[order][1:] == thread[order][:-1]) & (parent[order][1:] == parent[order][:-1])
    before = np.r_[-1, np.where(same, ops[order][:-1], -1)].astype(np.int64)
    out = np.empty(len(ops), dtype=np.int64)
    out[order] = before
    return out


def is_bias_add(product_dims: str, add_dims: str) -> bool:
    """[M, K] x [K, N] then [M, N] + [N] (or [1, N])."""
    a, b = (shapes_of(product_dims) + [(), ()])[:2]
    x, y = (shapes_of(add_dims) + [(), ()])[:2]
    return len(a) == 2 and len(b) == 2 and x == (a[0], b[1]) and y in ((b[1],), (1, b[1]))


def _bias_pairs_kept(events: pd.DataFrame, products: np.ndarray, adds: np.ndarray) -> np.ndarray:
    """`is_bias_add` of each (product, add) row pair, decided once per distinct pair of
    `input_dims` texts."""
    if not len(adds):
        return np.zeros(0, dtype=bool)
    if "input_dims" not in events.columns:
        return np.full(len(adds), is_bias_add("", ""), dtype=bool)
    codes, texts = factorized(events["input_dims"])
    # one integer per (product, add) pair of codes: a 1-D unique, not a row-wise one
    width = max(len(texts), 1)
    pairs = codes[products].astype(np.int64) * width + codes[adds].astype(np.int64)
    distinct, inverse = np.unique(pairs, return_inverse=True)
    verdict = np.fromiter((is_bias_add(str(texts[a]), str(texts[b]))
                           for a, b in zip((distinct // width).tolist(),
                                           (distinct % width).tolist(), strict=True)),
                          bool, len(distinct))
    kept: np.ndarray = verdict[inverse.reshape(-1)]
    return kept


def bias_add_pairs(events: pd.DataFrame, ops: np.ndarray, op_thread: np.ndarray,
                   op_parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in `events` (one rank's rows) of the bias adds of the module doc, by start,
    and of the product each adds to; `ops`: the op rows' positions, ascending; `op_thread`,
    `op_parent`: their thread and parent codes."""
    if not len(ops):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ts_us = events["ts_us"].to_numpy(float)[ops]
    before = previous_op(ops, ts_us, op_thread, op_parent)
    is_add = isin_mask(events["name"], (ADD,))
    is_product = isin_mask(events["name"], MATMULS)
    hit = np.flatnonzero(is_add[ops] & (before >= 0) & is_product[np.clip(before, 0, None)])
    hit = hit[_bias_pairs_kept(events, before[hit], ops[hit])]
    hit = hit[np.argsort(ts_us[hit], kind="stable")]
    return (np.asarray(ops[hit], dtype=np.int64), np.asarray(before[hit], dtype=np.int64))


def bias_add_positions(events: pd.DataFrame, ops: np.ndarray, op_thread: np.ndarray,
                       op_parent: np.ndarray) -> np.ndarray:
    """Positions in `events` of the bias adds of the module doc, by start (`bias_add_pairs`)."""
    return bias_add_pairs(events, ops, op_thread, op_parent)[0]


def rank_events(events: pd.DataFrame, rank: int | None = None) -> pd.DataFrame:
    """The rows of `rank` (None: the first rank), as the replay's graph takes them; raises
    ValueError where it raises (a column missing, no rows, no CPU rows)."""
    rows = rank_rows(events, rank)
    if not isin_mask(rows["lane"], ("cpu",)).any():
        raise ValueError("replay: the events table has no CPU rows to replay")
    return rows


def bias_adds(events: pd.DataFrame, rank: int | None = None) -> np.ndarray:
    """The index labels of `events` that are bias adds of the module doc, on `rank` (None:
    the first rank, the one the replay reads)."""
    rows = rank_events(events, rank)
    ops = op_positions(rows)
    parent = parent_positions(rows)[ops]
    threads = pair_codes(rows["pid"].to_numpy()[ops], rows["tid"].to_numpy()[ops])
    found = bias_add_positions(rows, ops, threads, parent)
    labels: np.ndarray = rows.index.to_numpy()[found]
    return labels
