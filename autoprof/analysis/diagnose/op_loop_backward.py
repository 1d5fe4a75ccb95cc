"""The backward a Python loop (`python_loop`, op_loop.py) adds to a training step.

Each iteration of a loop over items that autograd records adds nodes to the graph
(`logits[i:i + 1]` a `SliceBackward0`, `F.cross_entropy` a `LogSoftmaxBackward0` and a
`NllLossBackward0`, `sum` an `AddBackward0`), and `backward()` runs every one of them: as
many ops again as the forward's, each a launch and a dispatch. Vectorising the loop removes
them with the forward's ops. The trace ties a node to the forward op that made it: the
node's row, `autograd::engine::evaluate_function: <Node>` (on the device's backward thread
for CUDA, on the caller's thread on the CPU), carries the `Sequence number` (`seq_nr`) of the
forward op that recorded it. A loop's nodes are the step's nodes whose sequence number a
forward row inside the loop's span carries, on the loop's thread, and no forward row outside
it: an op on tensors that need no grad carries the counter's current value without making a
node, so a loop of such ops (an augmentation before the model) shares its numbers with the
model's next node, which is not the loop's. Its backward ops are the outermost ops (no
`aten::` op above) under those nodes.

On the H100 per-sample loss loop (128 `cross_entropy` calls on 1-row slices, then
`backward()`): 515 outermost forward ops, 512 of them the loop's; 517 nodes, 512 of them the
loop's (4 per item), running 511 of the backward's 520 outermost ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics._tree import parent_positions
from autoprof.analysis.metrics.stats import factorized

NODE_PREFIX = "autograd::engine::evaluate_function: "


def node_positions(host: pd.DataFrame) -> np.ndarray:
    """Per row of `host`, the position of the backward node it is in (its nearest
    `autograd::engine::evaluate_function:` row, itself for a node's row), -1 outside any."""
    codes, uniques = factorized(host["name"])
    is_node = np.array([str(u).startswith(NODE_PREFIX) for u in uniques], dtype=bool)[codes]
    parent = parent_positions(host)
    depth = host["depth"].to_numpy()
    node = np.where(is_node, np.arange(len(host)), -1)
    for level in np.unique(depth):  # parents first: a level at a time
        rows = np.flatnonzero((depth == level) & (parent >= 0) & ~is_node)
        node[rows] = node[parent[rows]]
    return node


def loop_backward(host: pd.DataFrame, outer: np.ndarray, node: np.ndarray, rows: np.ndarray,
                  loop: dict[str, Any]) -> dict[str, Any]:
    """The backward of one step's loop: `rows`, the positions in `host` of the step's rows;
    `outer` and `node`, per row of `host`, whether it is an outermost op and its node
    (`node_positions`); `loop`, the loop found on thread `loop["tid"]` over
    [`ts_us`, `end_us`]. Returns the loop's nodes (`nodes`), the outermost ops under them
    (`ops`), their time (`us`), the outermost ops under any node on another thread than the
    loop's (`other_thread_ops`: the backward's ops that thread's count lacks), and the host
    rows (their labels) inside the loop's nodes (`rows`: the launches they made)."""
    tid = host["tid"].to_numpy()[rows]
    ts = host["ts_us"].to_numpy(float)[rows]
    seq = host["seq_nr"].to_numpy()[rows] if "seq_nr" in host.columns \
        else np.full(len(rows), -1)
    in_node = node[rows]
    is_node = in_node == rows
    forward = (in_node < 0) & (seq >= 0)
    span = (tid == loop["tid"]) & (ts >= loop["ts_us"]) & (ts <= loop["end_us"])
    # an op on tensors that need no grad carries the counter's value without making a node:
    # a node whose number a forward op outside the loop carries too is that op's
    loop_nodes = rows[is_node & np.isin(seq, seq[forward & span])
                      & ~np.isin(seq, seq[forward & ~span])]
    in_loop = np.isin(in_node, loop_nodes)
    op = outer[rows]
    ends, starts = host["end_us"].to_numpy(float), host["ts_us"].to_numpy(float)
    return {"nodes": len(loop_nodes), "ops": int((op & in_loop).sum()),
            "us": float((ends[loop_nodes] - starts[loop_nodes]).sum()),
            "other_thread_ops": int((op & (in_node >= 0) & (tid != loop["tid"])).sum()),
            "rows": host.index.to_numpy()[rows[in_loop]]}
