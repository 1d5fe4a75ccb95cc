"""`recompiles`: a torch.compile'd function compiling again for new input shapes.

Dynamo compiles a frame for the shapes (and other guarded values) of its first call; a call
that fails the guards compiles again. The trace names each compiled graph it runs by frame
and recompile (`Torch-Compiled Region: 0/2` is frame 0's third graph), and the recorder times
the untraced calls around the window (`warmup_call_ms`, `wait_call_ms`,
`after_window_call_ms`):

| call | untraced ms | |
| --- | --- | --- |
| warm-up 1 | 2582 | the first compile |
| warm-up 2 | 926 | a recompile |
| warm-up 3 | 1020 | a recompile |
| profiled (`0/1`) | 1.2 | a cached graph |

- evidence: the trace shows compiled regions and either a graph past a frame's first (`f/n`
  with n >= 1) or an untraced call after the first that takes at least SLOW_RATIO times the
  steady call and MIN_COMPILE_MS more;
- fix: `compile-dynamic`: `torch.compile(..., dynamic=True)`, or
  `torch._dynamo.mark_dynamic(x, dim)` on the dimension that changes;
- gain, over the calls the recorder saw (the untraced ones and the profiled steps): before,
  their times; after, the first call's compile DYNAMIC_COMPILE_RATIO times over (a graph for
  every shape takes longer to compile) and every other call at the steady pace (the fastest
  untraced call or profiled step). It grows with recompiles and shrinks with the calls the
  program makes after its shapes stop changing: it says what the recorded calls would have
  cost, not a whole program's run.

DYNAMIC_COMPILE_RATIO was read from a development program (a 3-layer MLP over 6 sequence
lengths with dynamic=False, backend aot_eager, `compile_recompiles` in
benchmarks/cpu_heldout.py, on the 2-core machine of docs/validation.md): 12 calls with
dynamic=True took 5.2 s against a recorded first static compile of 2.6 s; predicted there
1.26x against 1.66x measured (-24%). One development program: the interval is at least
PREDICTION_ERROR either way.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from autoprof.analysis.diagnose.called_steps import called_steps
from autoprof.analysis.diagnose.cold_start_cpu import COMPILED_NAME
from autoprof.analysis.kinds import CatalogueFixName
from autoprof.analysis.metrics.stats import cpu_mask, name_matches

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

SLOW_RATIO = 10.0  # an untraced call this many times the steady one compiled
MIN_COMPILE_MS = 50.0  # and took this much longer: a compile, not a slow call
DYNAMIC_COMPILE_RATIO = 2.0  # a dynamic graph's compile over the first static one (module doc)
PREDICTION_ERROR = 0.5  # one development program
FIX: CatalogueFixName = "compile-dynamic"
REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")
HINT = ("torch.compile compiles again for new input shapes ({seen}): mark the dimension "
        "that changes dynamic, torch.compile(..., dynamic=True) or "
        "torch._dynamo.mark_dynamic(x, dim) before the call, or pad inputs to a few fixed "
        "sizes; TORCH_LOGS=recompiles names the guard that failed")


def _graphs(ctx: Analysis) -> dict[int, int]:
    """Per compiled frame, the most graphs the trace shows it run (`0/2`: three)."""
    names = ctx.events.loc[cpu_mask(ctx.events), "name"].astype(str)
    out: dict[int, int] = {}
    for name in names[names.str.startswith("Torch-Compiled Region")].unique():
        found = REGION.match(name)
        if found:
            frame, graph = int(found.group(1)), int(found.group(2))
            out[frame] = max(out.get(frame, 0), graph + 1)
    return out


def _calls_ms(ctx: Analysis) -> tuple[list[float], list[float]]:
    """(the untraced calls in order, the profiled called steps), in ms."""
    record = ctx.record
    untraced = [] if record is None else [
        float(v) for v in (*record.warmup_call_ms, *record.wait_call_ms,
                           *record.after_window_call_ms) if v > 0]
    steps = called_steps(ctx)
    profiled = [float(v) / 1e3 for v in steps["cpu_span_us"].to_numpy(float)] \
        if len(steps) else []
    return untraced, profiled


def recompiles(ctx: Analysis) -> dict[str, Any] | None:
    """The `recompiles` opportunity with its prediction (module doc), or None."""
    events = ctx.events
    if not len(events) or not name_matches(events["name"], COMPILED_NAME).any():
        return None
    graphs = _graphs(ctx)
    untraced, profiled = _calls_ms(ctx)
    calls = untraced + profiled
    if len(calls) < 2:
        return None
    steady = min(untraced[1:] + profiled) if untraced[1:] + profiled else calls[-1]
    slow = [i for i, ms in enumerate(untraced) if i > 0 and ms >= SLOW_RATIO * steady
            and ms - steady >= MIN_COMPILE_MS]
    most = max(graphs.values(), default=1)
    if not slow and most < 2:
        return None
    first = untraced[0] if untraced else calls[0]
    before = sum(calls)
    after = DYNAMIC_COMPILE_RATIO * first + (len(calls) - 1) * steady
    predicted = before / after if after > 0 else 1.0
    seen = f"{most} graphs of one frame in the trace" if most >= 2 else ""
    if slow:
        times = ", ".join(f"{untraced[i] / 1e3:.2f} s" for i in slow)
        seen = "; ".join(s for s in (seen, f"untraced calls after the first took {times} "
                                           f"against a steady {steady:.2f} ms") if s)
    extra_ms = sum(untraced[i] - steady for i in slow)
    per_call_us = 1e3 * extra_ms / len(calls)
    return {"cause": "recompiles", "us_per_step": per_call_us,
            "pct_of_step": 100.0 * extra_ms / before if before > 0 else 0.0,
            "max_speedup": before / (before - extra_ms) if before > extra_ms else None,
            "where": [{"name": "torch.compile recompiles", "us_per_step": per_call_us}],
            "hint": HINT.format(seen=seen),
            "evidence": {"graphs_per_frame_max": most, "slow_calls": len(slow),
                         "first_call_ms": round(first, 3), "steady_call_ms": round(steady, 3),
                         "calls": len(calls)},
            "fix": FIX, "predicted_speedup": predicted,
            "prediction_error": PREDICTION_ERROR,
            "predicted_spread": {"median": predicted, "q1": predicted, "q3": predicted,
                                 "min": predicted, "max": predicted}}
