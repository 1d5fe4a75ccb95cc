"""`elementwise_chain`: one source line's chain of memory-bound kernels, each a full pass.

Eager PyTorch runs each elementwise op, reduction or concatenation as a kernel of its own
that reads its inputs from memory and writes its result back: a hand-written RMSNorm
(`x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w`) makes four full passes over
`x` where one fused kernel makes one. On tensors larger than the L2 cache each pass runs at
the memory's bandwidth, so the chain's time is its passes. The evidence and the gain:

- evidence: in the profiled steps, runs of two or more consecutive kernels on one stream
  whose names are MEMORY_BOUND's (`elementwise_kernel`, `vectorized_elementwise_kernel`,
  `unrolled_elementwise_kernel`, `reduce_kernel`, `CatArrayBatchedCopy`), launched by ops of
  one source line (the run's `with_stack` lines, metrics/lines: without them the entry is
  silent, having no line to name nor to fuse), on a tensor of MIN_TENSOR_BYTES or more (from
  the ops' recorded input shapes and dtypes: a tensor that size leaves the 40-50 MB L2 of an
  A100, H100 or H200 between two kernels). The chains must hold MIN_SHARE of the step;
  a torch.compile'd run (its regions in the trace, or `triton_` kernels) is never offered it;
- fix: `fuse-elementwise`: the line's ops as one kernel: `torch.compile` of the function
  holding the line, or the fused op where one matches (`F.rms_norm` for an RMSNorm written
  out: pow, mean and rsqrt on one line);
- gain: replayed (metrics/replay/fuse_chain.py): each chain's kernels run as one kernel as
  long as the chain's longest kernel, launched once, the rest of the step as it was, at the
  untraced call's pace. The trace records shapes, not which tensor an op reads, so the
  fused kernel's bytes are not counted: its one pass is taken to cost what the chain's
  heaviest pass costs. Chains are fused line by line; a compiled function also fuses across
  its lines and can gain more than predicted.

Measured: the H100 held-out `qk_norm_rope_fp32` (query/key RMSNorm by hand and rotary
embedding in fp32, 8 x 16 x 2048 x 128, benchmarks/gpu/heldout_next_more.py) gained 1.70x
from the same lines written with fewer full-size passes (no torch.compile timed there); its
recorded run is this entry's development case (tests/analysis/catalogue/test_fuse_elementwise.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.code_fixes import MIN_SPEEDUP
from autoprof.analysis.diagnose.cold_start_cpu import COMPILED_NAME
from autoprof.analysis.metrics.op_inputs import DTYPE_BYTES
from autoprof.analysis.metrics.replay.changes import Change, FuseChains
from autoprof.analysis.metrics.replay.replay import predict_speedups
from autoprof.analysis.metrics.stats import name_matches, steps_gpu_busy_pct

# ATen's kernels; a letter before the name is another library's (cuBLAS's `splitKreduce_kernel`
# finishes a GEMM)
MEMORY_BOUND = re.compile(r"(?<![A-Za-z])(elementwise_kernel|reduce_kernel)|CatArrayBatchedCopy")
COMPILED_KERNEL = re.compile(r"^triton_")
MIN_SHARE = 0.10  # of the step: below it the fix is not worth a line
MIN_TENSOR_BYTES = 16 * 2 ** 20  # a tensor this large goes to memory between two kernels
MIN_KERNELS = 2
TOP_WHERE = 3
RMS_NORM_OPS = frozenset({"aten::pow", "aten::mean", "aten::rsqrt"})
HINT = ("{line}: {n} elementwise and reduction kernels in a row each read and write a full "
        "tensor; fuse them into one pass: torch.compile the function holding the line")
RMS_HINT = " (the line is an RMSNorm written out: F.rms_norm fuses it)"


@dataclass(frozen=True)
class Chain:
    """One chain: its kernels' events-table labels (launch order), its line, its kernels'
    total and longest times, the ops that launched them."""

    labels: tuple[int, ...]
    line: str
    kernel_us: float
    longest_us: float
    ops: frozenset[str]


@lru_cache(maxsize=4096)  # a step repeats its ops' shapes: each pair parsed once
def _largest_bytes(dims_text: str, types_text: str) -> int:
    """The largest tensor among an op's recorded inputs, in bytes (a tensor list's tensors
    included, at the element size of the op's first known dtype); 0 when none is known."""
    try:
        dims, types = json.loads(dims_text or "[]"), json.loads(types_text or "[]")
    except ValueError:
        return 0
    if not isinstance(dims, list) or not isinstance(types, list):
        return 0
    size = next((DTYPE_BYTES[t] for t in types if isinstance(t, str) and t in DTYPE_BYTES), 0)
    shapes = [d for d in dims if isinstance(d, list)]
    shapes += [s for d in shapes if d and all(isinstance(x, list) for x in d) for s in d]
    return max((int(np.prod(s)) * size for s in shapes
                if s and all(isinstance(x, int) for x in s)), default=0)


def elementwise_chains(events: pd.DataFrame, sources: pd.Series) -> list[Chain]:
    """The chains of the module doc's evidence in the profiled steps (`sources`: each
    events-table row's source line, by label)."""
    kernels = events[(events["cat"].astype(str) == "kernel").to_numpy()
                     & (events["step"] >= 0).to_numpy()]
    kernels = kernels.sort_values(["stream", "ts_us"], kind="stable")
    if not len(kernels):
        return []
    memory = name_matches(kernels["name"], MEMORY_BOUND)
    op_rows = kernels["op_row"].to_numpy()
    line = sources.reindex(op_rows).to_numpy(dtype=object)
    ops = events.reindex(op_rows)
    op_bytes = [_largest_bytes(str(d), str(t)) if m else 0 for d, t, m in
                zip(ops["input_dims"].fillna("").tolist(), ops["input_types"].fillna("").tolist(),
                    memory.tolist(), strict=True)]
    key = list(zip(kernels["step"].tolist(), kernels["stream"].tolist(), line.tolist(),
                   strict=True))
    out: list[Chain] = []
    start = 0
    for i in range(1, len(kernels) + 1):
        if i < len(kernels) and memory[i] and memory[start] and key[i] == key[start] and \
                isinstance(line[i], str) and line[i]:
            continue
        run = slice(start, i)
        if i - start >= MIN_KERNELS and memory[start] and isinstance(line[start], str) and \
                max(op_bytes[run]) >= MIN_TENSOR_BYTES:
            dur = kernels["dur_us"].to_numpy(float)[run]
            out.append(Chain(tuple(int(x) for x in kernels.index[run]), str(line[start]),
                             float(dur.sum()), float(dur.max()),
                             frozenset(str(n) for n in ops["name"].iloc[run])))
        start = i
    return out


def _compiled(events: pd.DataFrame) -> bool:
    names = events["name"]
    return bool(name_matches(names, COMPILED_NAME).any() or
                name_matches(names, COMPILED_KERNEL).any())


def _where(chains: list[Chain], n_steps: int) -> list[dict[str, Any]]:
    per_line: dict[str, float] = {}
    for c in chains:
        per_line[c.line] = per_line.get(c.line, 0.0) + c.kernel_us / n_steps
    top = sorted(per_line.items(), key=lambda kv: -kv[1])[:TOP_WHERE]
    return [{"name": name, "us_per_step": us} for name, us in top]


def _hint(chains: list[Chain], line: str) -> str:
    own = [c for c in chains if c.line == line]
    hint = HINT.format(line=line, n=max(len(c.labels) for c in own))
    return hint + (RMS_HINT if any(RMS_NORM_OPS <= c.ops for c in own) else "")


def fuse_elementwise(events: pd.DataFrame, step_us: float, baseline: Sequence[Change] = (),
                     sources: Callable[[], pd.Series | None] | None = None
                     ) -> dict[str, Any] | None:
    """The `elementwise_chain` opportunity with its prediction (`step_us`: the mean profiled
    step; `baseline`: the changes pacing the host to the untraced call; `sources`: gives
    each row's source line where the run has them), or None (the module doc's evidence
    absent or too small, a compiled run, or a gain under MIN_SPEEDUP)."""
    if sources is None or not step_us > 0 or _compiled(events):
        return None
    lines = sources()
    if lines is None:
        return None
    chains = elementwise_chains(events, lines)
    if not chains:
        return None
    n_steps = len(np.unique(events["step"].to_numpy()[events["is_gpu_work"].to_numpy(bool)
                                                      & (events["step"] >= 0).to_numpy()]))
    chain_us = sum(c.kernel_us for c in chains) / n_steps
    if chain_us < MIN_SHARE * step_us:
        return None
    got = predict_speedups(events, [FuseChains(tuple(c.labels for c in chains))],
                           baseline=baseline)
    if not np.isfinite(got.median) or got.median < MIN_SPEEDUP:
        return None
    us = sum(c.kernel_us - c.longest_us for c in chains) / n_steps
    where = _where(chains, n_steps)
    return {"cause": "elementwise_chain", "us_per_step": us, "pct_of_step": 100.0 * us / step_us,
            "max_speedup": step_us / (step_us - us) if step_us > us else None,
            "where": where, "hint": _hint(chains, where[0]["name"]),
            "evidence": {"chain_us_per_step": chain_us, "chains": len(chains),
                         "kernels": sum(len(c.labels) for c in chains),
                         "gpu_busy_pct": steps_gpu_busy_pct(events, n_steps, step_us)},
            "fix": "fuse-elementwise", "predicted_speedup": got.median,
            "predicted_spread": got.to_json()}
