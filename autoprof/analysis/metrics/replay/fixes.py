"""Named fixes: each the one replay change (or changes) that a fix a user applies makes.

The names are those the what-if and the opportunities use where one exists (`cuda-graph`);
the others name the change in the user's words. `call` is the decorated function's (or the
region's) host row name: a CUDA graph captures the call, and loader workers overlap the time
between two calls.

- `cuda-graph`: the call captured whole, each batch copied into static inputs, then replay:
  `CudaGraph(call)`, the copy's GPU time `input_copy_us` (`changes.input_copy_us`); what
  capture requires comes with it (the call's syncs gone, a capturable optimizer:
  `CudaGraph`), and `graph_drops_syncs` says when the call syncs;
- `remove-sync`: the sync removed, or replaced by a sync-free form: `RemoveSync()`; a
  scalar read (`.item()`) goes whole, with the check on its line (`RemoveSpans` of the
  spans diagnose/sync_reads.py names);
- `remove-line`: the line that syncs deleted: the sync, and for a data-dependent selection
  (a mask index, `.nonzero()`) the ops computing on it, forward and backward
  (`RemoveSelection`);
- `sync-free-cuda-graph`: the sync removed and the call captured whole;
- `loader-workers`: `workers` DataLoader workers, `pin_memory`, `non_blocking` copies: the
  fetches and the time between calls hidden (`OverlapBetweenCalls`, `HideLoader`), each step
  no shorter than its measured fetch time over the workers (their throughput), HtoD copies
  non-blocking, their ops' syncs kept (`op_syncs=False`: the DataLoader's pin-memory thread
  copies each batch in the main process, which the replay does not charge; dropping those
  syncs too raised this fix's median |error| on the H200 truth sets, as shown, from 16.8%
  to 20.2%, its over-predictions growing);
- `pin-memory`: `pin_memory` and `non_blocking` copies alone: HtoD copies non-blocking,
  and the sync each blocking copy's op makes after it gone (`NonBlockingCopies`);
- `no-loader`: the batches already on the device (the bound of perfect overlap): the
  fetches, the time between calls and the HtoD copies gone;
- `fused-optimizer`: `fused=True` on the optimizer: its ops become one fused op per step,
  the kernels their time above the per-kernel floor, paid once (`FuseOptimizer`);
- `addmm`: `x @ w + b` as `torch.addmm(b, x, w)`: the bias add folded into the GEMM
  (`FoldBiasAdd`);
- `bf16-autocast`: an fp16 AMP step's GradScaler dropped for bf16 autocast: the scaler's
  unscale, its found_inf sync and its update go (`RemoveScaler`); the matrix products keep
  their durations (bf16 and fp16 run at one rate on the tensor cores).

What a fix changes that the trace cannot show is not modelled: torch.compile's fusions and its
own wrapper, a fused optimizer's fewer bytes, a replacement op's own kernels (`torch.where` for a
mask index), the cost of pinning in the main process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from autoprof.analysis.kinds import FixName as FixName  # re-exported for older imports
from autoprof.analysis.metrics.replay.changes import (
    Change,
    CudaGraph,
    FoldBiasAdd,
    FuseOptimizer,
    HideLoader,
    NonBlockingCopies,
    OverlapBetweenCalls,
    RemoveScaler,
    RemoveSelection,
    RemoveSpans,
    RemoveSync,
)
from autoprof.analysis.metrics.replay.replay import predict_speedups
from autoprof.analysis.metrics.stats import Coverage, isin_mask
from autoprof.analysis.metrics.sync import host_syncs, of_batch_copy

Spans = tuple[tuple[float, ...], tuple[float, ...]]  # host spans' starts and ends (trace clock)
WORKERS = 4  # the DataLoader workers `loader-workers` predicts for (its hint names them)
# a copy that no longer exists: no call cost, no GPU time
_GONE = NonBlockingCopies(call_us=0.0, speedup=1e9)


def fix_changes(fix: FixName, call: str, workers: int = WORKERS,
                input_copy_us: float = 0.0, copy_speedup: float = 1.0,
                reads: Spans | None = None) -> list[Change]:
    """The replay changes of the named fix on a run whose call row is named `call`
    (`workers`: the DataLoader workers `loader-workers` starts; `input_copy_us`: the GPU time
    a CUDA graph of the call spends copying each batch into its static inputs;
    `copy_speedup`: how much faster `pin-memory`'s pinned copies run on the GPU; `reads`:
    the host spans `remove-sync` deletes, its scalar reads with the check on their line,
    diagnose/sync_reads.py)."""
    graph = CudaGraph(call, input_copy_us=input_copy_us)
    read_out: list[Change] = [RemoveSpans(*reads)] if reads is not None and reads[0] else []
    table: dict[FixName, list[Change]] = {
        "cuda-graph": [graph],
        "remove-sync": [*read_out, RemoveSync()],
        "remove-line": [RemoveSync(), RemoveSelection()],
        "sync-free-cuda-graph": [RemoveSync(), graph],
        "loader-workers": [HideLoader(workers=workers),
                           OverlapBetweenCalls(call, keep_fetches=True),
                           NonBlockingCopies(op_syncs=False)],
        "pin-memory": [NonBlockingCopies(speedup=copy_speedup)],
        "no-loader": [HideLoader(), OverlapBetweenCalls(call, keep_fetches=True), _GONE],
        "fused-optimizer": [FuseOptimizer()],
        "addmm": [FoldBiasAdd()],
        "bf16-autocast": [RemoveScaler()],
    }
    return table[fix]


def predict_fix(events: pd.DataFrame, fix: FixName, call: str,
                baseline: Sequence[Change] = (), rank: int | None = None,
                workers: int = WORKERS, input_copy_us: float = 0.0,
                copy_speedup: float = 1.0, reads: Spans | None = None) -> dict[str, Any]:
    """The named fix's replayed speedup as the summary shows it: `fix`, `predicted_speedup`
    (the median over the profiled steps, the number the what-if reads) and
    `predicted_spread` (median, quartiles, min and max over the steps); `baseline`: changes
    applied to both sides first (a `ScaleHost` to the untraced call); `input_copy_us` as
    `fix_changes`, and `copy_speedup` and `reads`."""
    changes = fix_changes(fix, call, workers, input_copy_us, copy_speedup, reads)
    got = predict_speedups(events, changes, rank=rank, baseline=baseline)
    return {"fix": fix, "predicted_speedup": got.median, "predicted_spread": got.to_json()}


def graph_drops_syncs(events: pd.DataFrame, call: str) -> bool:
    """Whether a CUDA graph of the call must go without a sync the call makes (`.item()`, a
    mask index, a copy to the host...): capture refuses them. A host-to-device copy of the
    batch is not one: the graph's static inputs take its place (`CudaGraph`)."""
    syncs = host_syncs(events)
    calls = events[isin_mask(events["lane"], ("cpu",)) & isin_mask(events["name"], (call,))]
    if not len(syncs) or not len(calls):
        return False
    spans = Coverage(calls["ts_us"].to_numpy(float), calls["end_us"].to_numpy(float))
    inside = spans.spans_at(syncs["ts_us"].to_numpy(float)) >= 0
    return bool((inside & ~of_batch_copy(events, syncs)).any())
