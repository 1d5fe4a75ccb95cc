"""The diagnostic checks. Each: an id, a precondition, a finder that returns one record or None.

Thresholds are module constants; docs/analysis.md explains each and the evidence for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from autoprof.analysis.diagnose.after_window import after_window, after_window_applies
from autoprof.analysis.diagnose.cold_start import cold_start, cold_start_applies
from autoprof.analysis.diagnose.cold_start_cpu import is_compiled
from autoprof.analysis.diagnose.cpu_checks import cpu_dispatch_bound, data_loader
from autoprof.analysis.diagnose.efficiency_checks import low_efficiency_diagnostic
from autoprof.analysis.diagnose.memory_checks import MEMORY_CHECKS
from autoprof.analysis.diagnose.profiler_checks import profiler_slowdown
from autoprof.analysis.diagnose.records import Check, Diagnostic, rounded
from autoprof.analysis.diagnose.threads import threads, threads_applies
from autoprof.analysis.diagnose.window_notes import ended_early, window_fitted
from autoprof.analysis.metrics.stats import median
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

HOST_SYNC_CRITICAL_SHARE = 0.25  # sync time / step time above which host-sync is critical
GPU_IDLE_SHARE = 0.30  # idle share of the step windows
GPU_IDLE_MIN_GAP_US = 50.0  # ... and one gap at least this long
DISPATCH_LATENCY_US = 20.0  # GPU free, kernel launched, still not started after this
QUEUE_OFFSET_US = 100.0  # median launch-to-start offset worth explaining
SHORT_KERNEL_SHARE = 0.5  # share of kernels shorter than their launch call


# --- overhead-bound ----------------------------------------------------------------------

# the hint of a torch.compile'd run: not told to compile
COMPILED_OVERHEAD_HINT = ("Give the GPU more work per launch: batch inputs or use larger "
                          "shapes, or capture the step in a CUDA graph "
                          "(mode='reduce-overhead' in its torch.compile, or "
                          "torch.cuda.graphs) so the host launches once per step.")

def _overhead_bound(ctx: Analysis) -> Diagnostic | None:
    v, ov = ctx.verdict, ctx.overhead
    if v.kind != "overhead-bound":
        return None
    ratio = f" ({ov.cpu_gpu_ratio:.0f}x)" if ov.cpu_gpu_ratio else ""
    return Diagnostic(
        id="overhead-bound",
        severity="warning",
        message=(f"{_busy_share(ov.gpu_busy_pct)}; self CPU time {fmt_us(ov.self_cpu_us)} "
                 f"vs self GPU time {fmt_us(ov.self_gpu_us)}{ratio}. The GPU waits for the "
                 "host to launch work."),
        evidence=dict(v.evidence),
        hint=COMPILED_OVERHEAD_HINT if is_compiled(ctx) else
        ("Give the GPU more work per launch: batch inputs or use larger shapes, fuse small "
         "ops (torch.compile), or capture the step in a CUDA graph "
         "(torch.compile(mode='reduce-overhead') or torch.cuda.graphs) so the host "
         "launches once per step."),
    )


def _busy_share(gpu_busy_pct: float | None) -> str:
    """How busy the GPU is in the window; None when no GPU work falls inside the steps (every
    kernel ran before the first one)."""
    if gpu_busy_pct is None:
        return "The GPU runs no work inside the profiled steps"
    return f"The GPU is busy only {gpu_busy_pct:.1f}% of the profiled window"


# --- host-sync ----------------------------------------------------------------------------

def _host_sync(ctx: Analysis) -> Diagnostic | None:
    """Fires when the breakdown gives the steps host_sync time: real waits for a device (a CPU
    tensor's .item() and autoprof's own syncs never count; metrics/sync.py)."""
    ov = ctx.overhead
    bd = ctx.breakdown.mean()
    sync_us = float(bd["buckets_us"]["host_sync"])  # type: ignore[index]
    if not sync_us > 0 or ov.host_syncs_in_steps == 0:
        return None
    share = sync_us / float(bd["step_us"]) if bd["step_us"] else 0.0  # type: ignore[arg-type]
    per_step = ov.host_syncs_in_steps / max(ov.steps, 1)
    where: list[dict[str, Any]] = next(
        (o["where"] for o in ctx.opportunities if o["cause"] == "host_sync"), [])
    between = (bd.get("between_calls_buckets_us") or {}).get("host_sync")  # type: ignore[attr-defined]
    at = ", ".join(f"{w['name']} {fmt_us(w['us_per_step'])}" for w in where) or (
        "between calls, in the caller's loop" if between else "n/a")
    names = ", ".join(f"{n} x{c}" for n, c in ov.sync_names.items())
    return Diagnostic(
        id="host-sync",
        severity="critical" if share >= HOST_SYNC_CRITICAL_SHARE else "warning",
        message=(f"{ov.host_syncs_in_steps} host sync(s) inside profiler steps ({per_step:.1f} "
                 f"per step; {names}) leave the GPU idle {fmt_us(sync_us)} per step, "
                 f"{100 * share:.1f}% of the step, waiting in or draining after them ({at})."),
        evidence={"host_syncs_in_steps": ov.host_syncs_in_steps,
                  "host_sync_in_steps_us": rounded(ov.host_sync_in_steps_us),
                  "host_sync_us_per_step": rounded(sync_us),
                  "share_of_step_time_pct": rounded(100 * share), "per_step": rounded(per_step),
                  "host_syncs_total": ov.host_syncs, "by_name": dict(ov.sync_names),
                  "where": where},
        hint=("Remove .item(), .cpu(), .tolist(), print(tensor) and explicit "
              "torch.cuda.synchronize() from the loop; keep values on the GPU and read "
              "metrics once every N steps; copy to pinned memory with non_blocking=True."),
    )


# --- gpu-idle -----------------------------------------------------------------------------

def _gpu_idle(ctx: Analysis) -> Diagnostic | None:
    ov = ctx.overhead
    if ov.step_window_us <= 0:
        return None
    share = ov.idle_gap_total_us / ov.step_window_us
    if share < GPU_IDLE_SHARE or ov.idle_gap_max_us < GPU_IDLE_MIN_GAP_US:
        return None
    where = ""
    at = ov.idle_gap_max_at_us
    steps = ctx.steps
    if at is not None and not steps.empty:
        hit = steps[(steps["start_us"] <= at) & (steps["start_us"] + steps["gpu_window_us"] > at)]
        if not hit.empty:
            row = hit.iloc[0]
            where = (f", in ProfilerStep#{int(row['step'])} at "
                     f"+{fmt_us(at - float(row['start_us']))}")
    return Diagnostic(
        id="gpu-idle",
        severity="warning",
        message=(f"The GPU is idle {100 * share:.1f}% of the time inside steps: {ov.idle_gaps} "
                 f"gap(s) totalling {fmt_us(ov.idle_gap_total_us)}; the largest is "
                 f"{fmt_us(ov.idle_gap_max_us)}{where}."),
        evidence={"idle_share_pct": rounded(100 * share), "idle_gaps": ov.idle_gaps,
                  "idle_gap_total_us": rounded(ov.idle_gap_total_us),
                  "idle_gap_max_us": rounded(ov.idle_gap_max_us),
                  "step_window_us": rounded(ov.step_window_us)},
        hint=("Look at the CPU lane during the largest gap: data loading, Python work, host "
              "syncs or CPU-side ops keep the GPU waiting. Overlap them with GPU work "
              "(DataLoader workers, pin_memory, non_blocking copies, a side stream) or move "
              "them out of the step."),
    )


def _gpu_idle_applies(ctx: Analysis) -> bool:
    return ctx.has_gpu and not ctx.steps.empty and ctx.verdict.kind != "overhead-bound"


# --- launch-latency -----------------------------------------------------------------------

def _launch_latency(ctx: Analysis) -> Diagnostic | None:
    ov = ctx.overhead
    p50, disp = ov.launch_latency_us_p50, ov.dispatch_latency_us_p50
    if p50 is None or disp is None:
        return None
    evidence = {"launch_latency_us_p50": rounded(p50),
                "launch_latency_us_p90": rounded(ov.launch_latency_us_p90),
                "launch_latency_us_max": rounded(ov.launch_latency_us_max),
                "launch_queued_pct": rounded(ov.launch_queued_pct),
                "dispatch_latency_us_p50": rounded(disp)}
    if disp >= DISPATCH_LATENCY_US:
        return Diagnostic(
            "launch-latency", "warning",
            (f"Kernels start {fmt_us(disp)} (median) after their launch returns although the "
             f"GPU has nothing queued before them (launch-to-start median {fmt_us(p50)})."),
            evidence,
            ("The launch path itself is slow: check for CPU contention, other processes on "
             "the GPU (MPS, time slicing) or profiler overhead; CUDA graphs replace many "
             "launches with one."),
        )
    if p50 >= QUEUE_OFFSET_US:
        return Diagnostic(
            "launch-latency", "info",
            (f"Kernels start {fmt_us(p50)} (median, p90 {fmt_us(ov.launch_latency_us_p90)}) "
             f"after the CPU launched them; {ov.launch_queued_pct or 0:.0f}% waited behind "
             f"earlier GPU work. The CPU runs ahead of the GPU, so launch cost is hidden."),
            evidence,
            ("Nothing to fix on the host: the launch queue is full. Speed now comes from "
             "the kernels (lower precision, better shapes, fused ops)."),
        )
    return None


# --- short-kernels ------------------------------------------------------------------------

def _short_kernels(ctx: Analysis) -> Diagnostic | None:
    ov = ctx.overhead
    ev = ctx.events
    linked = ev.loc[ev["is_gpu_work"].to_numpy(dtype=bool) & (ev["launch_row"].to_numpy() >= 0),
                    ["launch_row", "dur_us"]]
    if linked.empty:
        return None
    share = ov.short_kernels / len(linked)
    if share < SHORT_KERNEL_SHARE or ov.short_kernels < 2:
        return None
    launch_us = ev["dur_us"].reindex(linked["launch_row"].to_numpy())  # not every column
    kernel_med, launch_med = median(linked["dur_us"]), median(launch_us.dropna())
    return Diagnostic(
        id="short-kernels",
        severity="warning",
        message=(f"{ov.short_kernels} of {len(linked)} GPU work items ({100 * share:.0f}%) run "
                 f"shorter than the CPU call that launched them (median kernel "
                 f"{fmt_us(kernel_med)} vs launch call {fmt_us(launch_med)})."),
        evidence={"short_kernels": ov.short_kernels, "linked_kernels": len(linked),
                  "share_pct": rounded(100 * share), "kernel_us_median": rounded(kernel_med),
                  "launch_call_us_median": rounded(launch_med)},
        hint=("Each launch costs more host time than the GPU work it starts: "
              + ("" if is_compiled(ctx) else "fuse ops (torch.compile), ")
              + "batch several small inputs into one call, or replay the step as a CUDA "
              "graph."),
    )


# --- no-profiler-warmup -------------------------------------------------------------------

def _schedule(ctx: Analysis) -> dict[str, Any] | None:
    schedule = ctx.record.schedule if ctx.record is not None else {}
    return schedule if "warmup" in schedule else None


def _no_profiler_warmup(ctx: Analysis) -> Diagnostic | None:
    schedule = _schedule(ctx)
    if schedule is None or schedule.get("warmup") != 0:
        return None
    return Diagnostic(
        id="no-profiler-warmup",
        severity="warning",
        message=("The profiler schedule has warmup=0: the first active step also pays the "
                 "profiler's own start-up cost, so it reads slower than it is."),
        evidence={"schedule": dict(schedule)},
        hint="Use a schedule warmup of at least 1 (e.g. wait=1, warmup=1, active=3).",
    )


# --- straggler ----------------------------------------------------------------------------

def _straggler(ctx: Analysis) -> Diagnostic | None:
    rank = ctx.straggler
    if rank is None:
        return None
    table = ctx.ranks
    slow = table[table["rank"] == rank].iloc[0]
    others = table[table["rank"] != rank]
    other_compute = float(others["compute_us_median"].median())
    other_wait = float(others["collective_us_median"].median())
    if int(slow["gpu_collectives"]) > 0:
        return _gpu_straggler(rank, slow, others, len(table))
    return Diagnostic(
        id="straggler",
        severity="warning",
        message=(f"Rank {rank} is the straggler: it works {fmt_us(slow['compute_us_median'])}"
                 f" per step before its first collective, "
                 f"{fmt_us(slow['compute_us_median'] - other_compute)} longer than the other "
                 f"ranks (median {fmt_us(other_compute)}), which wait for it in collectives "
                 f"({fmt_us(other_wait)} per step)."),
        evidence={"straggler_rank": rank, "compute_us_median": rounded(slow["compute_us_median"]),
                  "others_compute_us_median": rounded(other_compute),
                  "others_collective_us_median": rounded(other_wait),
                  "straggler_collective_us_median": rounded(slow["collective_us_median"]),
                  "ranks": len(table)},
        hint=(f"Find what rank {rank} does that the others do not: uneven batches or sequence "
              "lengths, data loading, logging or checkpointing on one rank, a slower GPU or "
              "host. Balance the work or move rank-specific work out of the step."),
    )


def _gpu_straggler(rank: int, slow: pd.Series, others: pd.DataFrame, ranks: int) -> Diagnostic:
    """The NCCL form: the other ranks' GPUs sit in collectives with nothing to compute."""
    waiting = float(others["exposed_comm_pct"].median())
    own = float(slow["exposed_comm_pct"])
    return Diagnostic(
        id="straggler",
        severity="warning",
        message=(f"Rank {rank} is the straggler: the other ranks' GPUs spend {waiting:.1f}% of "
                 f"their step in collectives with no compute beside them (exposed "
                 f"communication), waiting for rank {rank}, whose own share is {own:.1f}%."),
        evidence={"straggler_rank": rank, "others_exposed_comm_pct": rounded(waiting),
                  "straggler_exposed_comm_pct": rounded(own),
                  "compute_us_median": rounded(slow["compute_us_median"]),
                  "others_compute_us_median": rounded(float(others["compute_us_median"].median())),
                  "ranks": ranks},
        hint=(f"Find what rank {rank} does that the others do not: uneven batches or sequence "
              "lengths, data loading, logging or checkpointing on one rank, a slower GPU or "
              f"host. Rank {rank}'s own opportunities name where its extra time goes."),
    )


CHECKS: tuple[Check, ...] = (
    Check("overhead-bound", "needs GPU work", lambda c: c.has_gpu, _overhead_bound),
    Check("host-sync", "needs profiler steps", lambda c: not c.steps.empty, _host_sync),
    Check("straggler", "needs two or more ranks", lambda c: len(c.ranks) >= 2, _straggler),
    Check("cold-start", "needs two profiler steps, two warm-up calls, or a profiler step and "
          "an untraced call (warm-up or wait) in the manifest",
          cold_start_applies, cold_start),
    Check("gpu-idle", "needs GPU work in profiler steps, and a verdict other than "
          "overhead-bound (that finding covers an idle GPU)", _gpu_idle_applies, _gpu_idle),
    Check("launch-latency", "needs kernels linked to their launch calls",
          lambda c: c.has_gpu, _launch_latency),
    Check("short-kernels", "needs kernels linked to their launch calls",
          lambda c: c.has_gpu, _short_kernels),
    Check("no-profiler-warmup", "needs a manifest with options.schedule",
          lambda c: _schedule(c) is not None, _no_profiler_warmup),
    *MEMORY_CHECKS,
    Check("cpu-dispatch-bound", "needs profiler steps and no GPU work",
          lambda c: not c.steps.empty and not c.has_gpu, cpu_dispatch_bound),
    Check("threads", "needs profiler steps and no GPU work", threads_applies, threads),
    Check("data-loader", "needs profiler steps", lambda c: not c.steps.empty, data_loader),
    Check("profiler-slowdown", "needs untraced calls in the manifest and profiled steps",
          lambda c: not c.steps.empty, profiler_slowdown),
    Check("after-window", "needs the calls after the window and untraced calls in the "
          "manifest", after_window_applies, after_window),
    Check("low-efficiency", "needs GPU work and a verdict other than overhead- or input-bound",
          lambda c: c.has_gpu, lambda c: low_efficiency_diagnostic(c.efficiency, c.verdict.kind,
                                              is_compiled(c))),
    Check("window-fitted", "needs a manifest whose budget cut the window",
          lambda c: c.record is not None, window_fitted),
    Check("ended-early", "needs a partial run whose manifest says why it ended",
          lambda c: c.record is not None, ended_early),
)
