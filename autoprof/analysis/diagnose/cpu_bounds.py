"""The bounds of a CPU-only run: its heaviest ops, each as a fix with its own ceiling.

On a CPU-only run the host bucket ``host_cpu_work`` is the whole step: "remove all host work"
bounds nothing anyone can do (a resnet18 step read "up to 11533.65x"). What a user can change
is one op at a time, so the bucket is replaced by its heaviest ops by self time, each bounded
by taking only that op away:

| cause | us_per_step | pct_of_step | max_speedup | where |
| --- | --- | --- | --- | --- |
| cpu_op | 26510.2 | 33.6 | 1.51 | aten::mm 26510.2 |
| cpu_op | 9105.7 | 11.5 | 1.13 | aten::where 9105.7 |

``max_speedup`` = step / (step - the op's self time per step); None for an op that holds more
than CPU_OP_MAX_BOUND_PCT of the step.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from autoprof.analysis.metrics.flops import is_matrix_op

TOP_CPU_OPS = 3
CPU_OP_MIN_PCT = 1.0  # ops below this share of the step are left out
# an op holding more than this is the step: "if it took no time" bounds nothing (0.6% left
# gives 170x); its rate says what a fix can reach (the threads finding, efficiency)
CPU_OP_MAX_BOUND_PCT = 90.0


def _hint(name: str, pct: float, speedup: float | None, compiled: bool = False) -> str:
    """The op's hint; a torch.compile'd run is not told to compile (`compiled`)."""
    bound = f"up to {speedup:.2f}x if it took no time" if speedup else \
        "the step is this op, so only a faster op helps"
    head = f"{name} holds {pct:.0f}% of the step in its own time: {bound}; "
    if is_matrix_op(name):
        return head + ("that is arithmetic: fewer FLOPs (a smaller model, batch or sequence), "
                       "a precision the CPU runs faster (bf16 autocast where the CPU has "
                       "AMX or AVX512-BF16)" + ("" if compiled else
                                                 ", or torch.compile to fuse what surrounds it"))
    if compiled:
        return head + ("call it less often, or do its work once outside the step (the "
                       "function is torch.compile'd already and left this op unfused)")
    return head + ("fuse it with its neighbours (torch.compile), call it less often, or do "
                   "its work once outside the step")


def cpu_op_bounds(heavy: pd.DataFrame, step_us: float,
                  compiled: bool = False) -> list[dict[str, Any]]:
    """The opportunities of the heaviest ops (``heavy``: name, self_us_per_step, heaviest
    first, metrics/cpu_ops.heavy_ops) of a CPU-only run whose mean step is ``step_us``
    (`compiled`: the trace shows torch.compile'd code, whose hints do not say to compile)."""
    out: list[dict[str, Any]] = []
    for name, us in zip(heavy["name"].astype(str), heavy["self_us_per_step"].astype(float),
                        strict=True):
        pct = 100.0 * us / step_us
        if len(out) == TOP_CPU_OPS or pct < CPU_OP_MIN_PCT:
            break
        speedup = step_us / (step_us - us) if pct <= CPU_OP_MAX_BOUND_PCT else None
        out.append({"cause": "cpu_op", "us_per_step": us, "pct_of_step": pct,
                    "max_speedup": speedup, "where": [{"name": name, "us_per_step": us}],
                    "hint": _hint(name, pct, speedup, compiled)})
    return out
