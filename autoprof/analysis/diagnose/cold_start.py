"""The cold-start finding: the first profiled step or the first untraced call is much slower
than the rest (one-time costs: allocation, autotuning, compilation, lazy imports).

On a CPU-only run the first step's excess must also be shown to be one-time
(cold_start_cpu.py: ops only it calls, or no warm-up before it and later steps that agree), and
the first warm-up call is measured against the other warm-up calls only (the profiled steps
carry the profiler's cost and, on a shared CPU, the wait for cores). A torch.compile'd
function's slow first call is named as compilation, with its own hint.

Thresholds are module constants; docs/analysis.md explains each and the evidence for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from autoprof.analysis.diagnose.called_steps import called_steps, data_loader_us
from autoprof.analysis.diagnose.cold_start_cpu import (
    COMPILE_HINT,
    COMPILE_MIN_MS,
    cpu_first_step_is_one_time,
    is_compiled,
)
from autoprof.analysis.diagnose.records import Diagnostic, rounded
from autoprof.analysis.metrics.stats import median
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

COLD_START_RATIO = 1.75  # first step (or first warm-up call) vs the median of the rest
COLD_START_UNTRACED_RATIO = 3.0  # first untraced call (synced) vs the median profiled step


def _first_rank_steps(ctx: Analysis) -> list[tuple[int, float]]:
    steps = called_steps(ctx)
    if steps.empty:
        return []
    first = steps[steps["rank"] == steps["rank"].min()].sort_values("start_us")
    return list(zip(first["step"].astype(int), first["cpu_span_us"].astype(float), strict=True))


def _warmup_calls(ctx: Analysis) -> list[float]:
    """The warm-up call times (ms) of the record; [] without (older manifests, a trace)."""
    return [float(c) for c in ctx.record.warmup_call_ms] if ctx.record is not None else []


def _untraced_calls(ctx: Analysis) -> list[float]:
    """Every untraced call before profiling, in call order: the warm-up calls, then the
    profiler steps before the first recorded one (``wait_call_ms``: skip_first and wait)."""
    wait = [float(c) for c in ctx.record.wait_call_ms] if ctx.record is not None else []
    return _warmup_calls(ctx) + wait


def _warmup_was_off(ctx: Analysis) -> bool:
    warmup = ctx.record.warmup_calls if ctx.record is not None else None
    if warmup is not None:
        return warmup == 0
    return not _warmup_calls(ctx)


def _step_median_us(ctx: Analysis) -> float | None:
    """Median profiled step of the first rank, as a synchronized call would time it: the
    longer of its CPU span and its GPU window (step start to the end of its GPU work)."""
    steps = called_steps(ctx)
    if steps.empty:
        return None
    first = steps[steps["rank"] == steps["rank"].min()]
    wall = np.maximum(first["cpu_span_us"].to_numpy(float), first["gpu_window_us"].to_numpy(float))
    value = median(wall)
    return value if np.isfinite(value) and value > 0 else None


def cold_start_applies(ctx: Analysis) -> bool:
    steps = len(_first_rank_steps(ctx))
    return steps >= 2 or len(_warmup_calls(ctx)) >= 2 or (steps >= 1 and bool(_untraced_calls(ctx)))


def _untraced_slow(ctx: Analysis, evidence: dict[str, Any]) -> str | None:
    """The sentence about a slow first untraced call, or None; fills ``evidence``."""
    calls, untraced = _warmup_calls(ctx), _untraced_calls(ctx)
    if not untraced:
        return None
    first_ms = untraced[0]
    if len(untraced) >= 2 and first_ms < COLD_START_RATIO * median(untraced[1:]):
        return None  # the first call costs what the others do: nothing one-time about it
    found = []
    if len(calls) >= 2:
        rest_ms = median(calls[1:])
        ratio = calls[0] / rest_ms if rest_ms > 0 else float("inf")
        evidence.update(first_warmup_call_ms=rounded(calls[0], 3),
                        other_warmup_calls_median_ms=rounded(rest_ms, 3),
                        warmup_ratio=rounded(ratio), warmup_calls=len(calls))
        if ratio >= COLD_START_RATIO:
            found.append(f"{ratio:.1f}x the median of the other warm-up calls ({rest_ms:.3f} ms)")
    step_us = None if not ctx.has_gpu and len(calls) >= 2 else _step_median_us(ctx)
    if step_us is not None:
        ratio = first_ms * 1e3 / step_us
        evidence.update(first_untraced_call_ms=rounded(first_ms, 3), untraced_calls=len(untraced),
                        wait_calls=len(untraced) - len(calls), profiled_step_median_us=rounded(
                            step_us), untraced_step_ratio=rounded(ratio),
                        untraced_ratio_threshold=COLD_START_UNTRACED_RATIO)
        if ratio >= COLD_START_UNTRACED_RATIO:
            found.append(f"{ratio:.1f}x the median profiled step ({fmt_us(step_us)})")
    if not found:
        return None
    evidence["warmup_slow"] = True
    which = ("first warm-up call" if calls else "first call (untraced: a wait step of the "
             "profiler schedule, before it recorded anything)")
    # compiled code in the trace, but a first call this short compiled nothing (a cache hit)
    evidence["compiled"] = bool(evidence.get("compiled")) and first_ms >= COMPILE_MIN_MS
    if evidence["compiled"]:
        rest = f"; the other warm-up calls took {rest_ms:.3f} ms" if len(calls) >= 2 else ""
        return (f"the {which} took {fmt_us(first_ms * 1e3)} compiling: the function is "
                f"torch.compile'd (the profiled steps run its compiled code){rest}")
    return f"the {which} took {first_ms:.3f} ms, " + " and ".join(found)


def _first_step_loader_excess_us(ctx: Analysis, steps: list[tuple[int, float]]) -> float:
    """How much longer the first step spent in a DataLoader than the later steps' median (a
    new epoch starting its iterator or workers is slow once per epoch, not once per process)."""
    loader = data_loader_us(ctx, int(called_steps(ctx)["rank"].min()))
    if not loader:
        return 0.0
    return loader.get(steps[0][0], 0.0) - median(loader.get(n, 0.0) for n, _ in steps[1:])


def _one_time_costs(ctx: Analysis) -> str:
    if ctx.has_gpu:
        return "cuBLAS heuristics, lazy module loading, allocator growth"
    return "lazy initialisation, first-call dispatch, allocator growth"


WARMUP_OFF_HINT = ("Set warmup>=1 (autoprof's default is 3) so one-time costs stay out of the "
                   "profiled steps.")


def _slow_first_step(ctx: Analysis, evidence: dict[str, Any]) -> str | None:
    """The sentence about a slow first profiled step, or None; fills ``evidence``."""
    steps = _first_rank_steps(ctx)
    if len(steps) < 2:
        return None
    first_no, first_us = steps[0]
    rest_us = median(s for _, s in steps[1:])
    ratio = first_us / rest_us if rest_us > 0 else float("inf")
    evidence.update(first_step=first_no, first_step_us=rounded(first_us),
                    other_steps_median_us=rounded(rest_us), step_ratio=rounded(ratio))
    loader_us = _first_step_loader_excess_us(ctx, steps)
    evidence.update(first_step_data_loader_extra_us=rounded(loader_us))
    if ratio < COLD_START_RATIO or loader_us >= 0.5 * (first_us - rest_us):
        return None
    if not ctx.has_gpu and not cpu_first_step_is_one_time(
            ctx, steps, len(_untraced_calls(ctx)), evidence):
        return None
    evidence["step_slow"] = True
    named = evidence.get("one_time_ops") or {}
    where = f", most of it in {', '.join(named)}, which the later steps do not repeat" \
        if named else ""
    return (f"the first profiled step (ProfilerStep#{first_no}) took {fmt_us(first_us)}, "
            f"{ratio:.1f}x the median of the later steps ({fmt_us(rest_us)}){where}")


def _hint(ctx: Analysis, step_slow: bool, warmup_off: bool, compiled: bool) -> str:
    if compiled and not step_slow:
        return COMPILE_HINT
    if step_slow:
        hint = ("Warm up more before recording: more untraced warm-up calls and a profiler "
                f"schedule warmup of at least 1, so one-time costs ({_one_time_costs(ctx)}) land "
                "before the active steps; or leave the first step out when reading per-step "
                "numbers.")
        return f"{WARMUP_OFF_HINT} {hint}" if warmup_off else hint
    if warmup_off:
        return ("The profiler schedule's wait step absorbed it this time, so the recorded "
                f"steps are clean, but only by luck of the schedule. {WARMUP_OFF_HINT}")
    return ("Warm-up already kept this one-time cost out of the profile; expect it again "
            "at the start of every new process (pre-load or compile ahead if it matters).")


def cold_start(ctx: Analysis) -> Diagnostic | None:
    evidence: dict[str, Any] = {"ratio_threshold": COLD_START_RATIO, "step_slow": False,
                                "warmup_slow": False, "compiled": is_compiled(ctx)}
    parts = [p for p in (_slow_first_step(ctx, evidence), _untraced_slow(ctx, evidence))
             if p is not None]
    if not parts:
        return None
    step_slow = bool(evidence["step_slow"])
    warmup_off = _warmup_was_off(ctx)
    evidence["warmup_off"] = warmup_off
    text = "; ".join(parts)
    message = text[0].upper() + text[1:] + "."
    hint = _hint(ctx, step_slow, warmup_off, bool(evidence["compiled"]))
    return Diagnostic("cold-start", "warning" if step_slow else "info", message, evidence, hint)
