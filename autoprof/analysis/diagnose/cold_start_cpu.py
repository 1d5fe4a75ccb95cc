"""What proves a cold start on a CPU-only run, and whether the function is torch.compile'd.

A first profiled step that is slower than the later ones is a cold start only when its extra
time is one-time work. On CPU the steps of a warm function also differ because they wait for
cores (diagnose/threads.py): steps of 7.74, 7.96 and 0.10 ms doing the same three ops are
not a cold start. So on CPU the first step's excess counts as one-time when either

- ops that the later steps call less often (a lazy module's ``aten::uniform_`` filling its
  weights, a first allocation) hold at least ONE_TIME_SHARE of the excess, or
- no untraced call ran before it (nothing could have warmed the function) and the later steps
  agree with each other (within LATER_STEPS_AGREE): the first is the odd one out.

| step | aten::uniform_ calls | aten::uniform_ self | step |
| --- | --- | --- | --- |
| 0 | 2 | 545 ms | 569 ms |
| 1 | 0 | 0 | 50.8 ms |
| 2 | 0 | 0 | 18.2 ms |

A torch.compile'd function shows its compiled regions in the trace (``Torch-Compiled Region``,
``TorchDynamo Cache Lookup``, ``## Call CompiledFxGraph``): its slow first call is compilation
when it took COMPILE_MIN_MS or more (a 0.6 ms first call of a compiled function hit a cache).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pandas as pd

from autoprof.analysis.diagnose.called_steps import called_steps
from autoprof.analysis.diagnose.records import rounded
from autoprof.analysis.metrics.cpu_ops import per_step_ops
from autoprof.analysis.metrics.stats import median, name_matches

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

ONE_TIME_SHARE = 0.5  # one-time ops hold at least half the first step's excess
LATER_STEPS_AGREE = 1.5  # slowest / fastest of the later steps
TOP_ONE_TIME = 3
ONE_TIME_NAMED_SHARE = 0.1  # an op named in the evidence holds this share of the one-time time
COMPILE_MIN_MS = 100.0  # a first call that compiled takes this long at least (dynamo, inductor)
COMPILED_NAME = re.compile(r"^(Torch-Compiled Region|TorchDynamo Cache Lookup|CompiledFunction)"
                           r"|CompiledFxGraph")

COMPILE_HINT = ("Compilation runs once per process, and again for each new input shape or "
                "failed guard (TORCH_LOGS=recompiles names them). Warm-up kept it out of the "
                "profile here. To pay it less: keep input shapes fixed or mark them dynamic "
                "(torch.compile(dynamic=True), torch._dynamo.mark_dynamic), keep "
                "torch.compile's on-disk caches between runs (on by default; "
                "torch.compiler.save_cache_artifacts carries them to other machines), and "
                "avoid mode='max-autotune' where its autotuning time is not repaid.")


def is_compiled(ctx: Analysis) -> bool:
    """Whether the trace shows torch.compile'd code running."""
    return bool(name_matches(ctx.events["name"], COMPILED_NAME).any())


def _one_time_us(table: pd.DataFrame, first: int, later: list[int]) -> dict[str, float]:
    """Per op: the first step's self time beyond the later steps' median, for the ops the
    first step calls more often than the later steps do."""
    out: dict[str, float] = {}
    for name, rows in table.groupby("name"):
        by_step = rows.set_index("step")
        calls0 = float(by_step["calls"].get(first, 0))
        later_calls = median(float(by_step["calls"].get(s, 0)) for s in later)
        if calls0 <= later_calls:
            continue
        extra = float(by_step["self_us"].get(first, 0.0)) - median(
            float(by_step["self_us"].get(s, 0.0)) for s in later)
        if extra > 0:
            out[str(name)] = extra
    return out


def cpu_first_step_is_one_time(ctx: Analysis, steps: list[tuple[int, float]],
                               untraced_before: int, evidence: dict[str, Any]) -> bool:
    """Whether the first of ``steps`` ((step, us) of the first rank) is slow for one-time
    reasons (module doc); fills ``evidence``."""
    first_no, first_us = steps[0]
    later = [us for _, us in steps[1:]]
    excess_us = first_us - median(later)
    called = called_steps(ctx)
    called = called[called["rank"] == called["rank"].min()]
    table = per_step_ops(ctx.events, called)
    one_time = _one_time_us(table, first_no, [n for n, _ in steps[1:]])
    total_us = sum(one_time.values())
    top = [(k, v) for k, v in sorted(one_time.items(), key=lambda kv: -kv[1])[:TOP_ONE_TIME]
           if v >= ONE_TIME_NAMED_SHARE * total_us]
    agree = max(later) / min(later) if min(later) > 0 else float("inf")
    evidence.update(one_time_us=rounded(total_us, 1),
                    one_time_ops={k: rounded(v, 1) for k, v in top},
                    one_time_share_pct=rounded(100.0 * total_us / excess_us, 1)
                    if excess_us > 0 else None,
                    later_steps_spread=rounded(agree), untraced_calls_before=untraced_before)
    if excess_us > 0 and total_us >= ONE_TIME_SHARE * excess_us:
        return True
    return untraced_before == 0 and agree <= LATER_STEPS_AGREE
