"""The overhead picture: CPU time vs GPU time, how busy the GPU was, and why it waited."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.codes import pair_codes
from autoprof.analysis.metrics.stats import (
    by_rank,
    cpu_mask,
    cpu_work_mask,
    finite_or_none,
    for_rank,
    gaps_merged_many,
    gpu_work,
    median,
    merge_intervals,
    name_matches,
    quantile,
    ranks_of,
    require_columns,
    step_rows,
    union_length,
)
from autoprof.analysis.metrics.steps import gpu_known_from, per_step
from autoprof.analysis.metrics.sync import host_syncs

# Communication kernels: they occupy the GPU (and count as busy) while often only waiting.
COMM_KERNEL = re.compile(r"^(?:ncclKernel|ncclDevKernel|nccl)", re.IGNORECASE)
# Collective ops on either lane: NCCL kernels, and the host side of every backend (gloo's
# `gloo:all_reduce` on its worker thread, `c10d::allreduce_`, `record_param_comms`, ...).
COLLECTIVE_NAME = re.compile(
    r"^(?:ncclKernel|ncclDevKernel|nccl:|gloo:|c10d::|record_param_comms|ProcessGroup)"
)
# Idle stretches shorter than this are the normal gap between back-to-back kernels.
MIN_IDLE_GAP_US = 1.0

NEEDS = ["name", "cat", "lane", "is_gpu_work", "ts_us", "dur_us", "end_us", "self_us",
         "step", "rank", "parent", "launch_row", "op_row", "device", "stream"]


@dataclass(frozen=True)
class Overhead:
    """Where the time went, for one rank (or all ranks pooled when `rank` is None).

    - `self_cpu_us`: self time of every CPU row (the profiler's own span excluded).
    - `self_gpu_us`: summed durations of GPU work (kernels, memcpy, memset); GPU-lane
      annotation spans are not work and never count.
    - `cpu_gpu_ratio`: self_cpu_us / self_gpu_us (None without GPU work).
    - `window_us`: the profiled window: from the first profiler step's start (the first CPU
      row's when there are no steps) to the end of the last GPU work (the last CPU row's end
      without GPU work). `gpu_busy_pct` = 100 * union of GPU work inside the window /
      window_us; with several ranks, busy and window times are summed over ranks.
      `gpu_comm_pct`: the part of the window covered by NCCL kernels (included in busy: an
      NCCL kernel occupies the GPU even while it only waits for another rank).
    - launch latency: kernel start minus the end of the runtime call that launched it (the
      CPU-to-GPU offset), p50/p90/max over kernels with a known launch. `launch_queued_pct`:
      share of those kernels that could not start earlier because earlier work on their stream
      was still running; `dispatch_latency_us_p50`: start minus max(launch end, end of the
      previous work on the stream), the delay not explained by the queue.
    - idle gaps: stretches of at least MIN_IDLE_GAP_US inside step windows (step start to the
      end of the step's last GPU work, merged over steps; `step_window_us` is their length)
      where no GPU work runs; `idle_gap_max_at_us` is where the largest one starts.
    - `short_kernels`: GPU work items shorter than the CPU call that launched them (when one
      call launches several, as a CUDA graph replay does, their summed time is compared).
    - host syncs (see _sync.py): every one, and those inside profiler steps, except a
      `cudaDeviceSynchronize` directly under the last step's `ProfilerStep#N` span that is the
      step's last event (the end-of-cycle sync a profiling driver such as autoprof issues so
      that no kernel is lost).
    """

    rank: int | None
    ranks: int
    steps: int
    window_us: float
    self_cpu_us: float
    self_gpu_us: float
    cpu_gpu_ratio: float | None
    gpu_busy_us: float
    gpu_busy_pct: float | None
    gpu_comm_pct: float | None
    kernels: int
    launches: int
    launch_latency_us_p50: float | None
    launch_latency_us_p90: float | None
    launch_latency_us_max: float | None
    launch_queued_pct: float | None
    dispatch_latency_us_p50: float | None
    idle_gaps: int
    idle_gap_total_us: float
    idle_gap_max_us: float
    idle_gap_max_at_us: float | None
    step_window_us: float
    short_kernels: int
    host_syncs: int
    host_sync_us: float
    host_syncs_in_steps: int
    host_sync_in_steps_us: float
    step_cpu_span_us_median: float | None
    step_gpu_work_us_median: float | None
    sync_names: dict[str, int] = field(default_factory=dict)

    @property
    def has_gpu(self) -> bool:
        return self.kernels > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (NaN and infinities become None)."""
        out = asdict(self)
        return {k: finite_or_none(v) if isinstance(v, float) else v for k, v in out.items()}


@dataclass
class _Parts:
    """Per-rank pieces that pool across ranks."""

    window_us: float = 0.0
    busy_us: float = 0.0
    comm_us: float = 0.0
    latencies: list[np.ndarray] = field(default_factory=list)
    dispatch: list[np.ndarray] = field(default_factory=list)
    queued: list[np.ndarray] = field(default_factory=list)
    gaps: list[np.ndarray] = field(default_factory=list)
    gap_starts: list[np.ndarray] = field(default_factory=list)
    step_window_us: float = 0.0
    short_kernels: int = 0


def _window(events: pd.DataFrame, work: pd.DataFrame) -> tuple[float, float]:
    steps = step_rows(events)
    cpu = cpu_work_mask(events)  # a mask, not a copy of (nearly) every row
    if not steps.empty:
        start = float(steps["ts_us"].min())
    elif cpu.any():
        start = float(_masked(events, "ts_us", cpu).min())
    elif not work.empty:
        start = float(work["ts_us"].min())
    else:
        return 0.0, 0.0
    if not work.empty:
        end = float(work["end_us"].max())
    elif not steps.empty:
        end = float(steps["end_us"].max())
    else:
        end = float(_masked(events, "end_us", cpu).max())
    return start, max(end, start)


def _masked(events: pd.DataFrame, column: str, mask: np.ndarray) -> pd.Series:
    """One column of the rows in `mask`, as a Series (pandas' NaN-skipping reductions, without
    filtering the whole frame)."""
    return pd.Series(events[column].to_numpy()[mask])


def _previous_ends(device: np.ndarray, stream: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per row (in start order), the latest end of the rows before it on its device and
    stream (NaN for the first): each stream's running maximum (NaN ends skipped, as pandas'
    ``cummax`` skips them), shifted one row."""
    _, stream_of = pair_codes(device, stream)
    out = np.full(len(end), np.nan)
    order = np.argsort(stream_of, kind="stable")  # each stream's rows together, in order
    cuts = np.flatnonzero(np.diff(stream_of[order])) + 1
    for rows in np.split(order, cuts):
        ends = end[rows]
        running = np.fmax.accumulate(ends)
        running[np.isnan(ends)] = np.nan
        out[rows[1:]] = running[:-1]
    return out


def _launch_parts(events: pd.DataFrame, work: pd.DataFrame, parts: _Parts) -> None:
    order = np.argsort(work["ts_us"].to_numpy(dtype=float), kind="stable")  # NaN last
    launch_row = work["launch_row"].to_numpy()[order]
    linked = launch_row >= 0
    if not linked.any():
        return
    prev_end = _previous_ends(work["device"].to_numpy()[order], work["stream"].to_numpy()[order],
                              work["end_us"].to_numpy(dtype=float)[order])
    launch_rows = launch_row[linked]
    # what events.reindex(launch_rows) gives for these two columns (NaN for a label not in
    # the table), without copying every column of the launch rows
    at = events.index.get_indexer(launch_rows)
    found = at >= 0
    safe = np.where(found, at, 0)
    launch_end = np.where(found, events["end_us"].to_numpy(dtype=float)[safe], np.nan)
    launch_dur = np.where(found, events["dur_us"].to_numpy(dtype=float)[safe], np.nan)
    start = work["ts_us"].to_numpy(dtype=float)[order][linked]
    prev = np.nan_to_num(prev_end[linked], nan=-math.inf)
    ok = ~np.isnan(launch_end)
    parts.latencies.append((start - launch_end)[ok])
    parts.queued.append((prev > launch_end)[ok])
    parts.dispatch.append((start - np.maximum(launch_end, prev))[ok])
    # a launch call that starts several items (a CUDA graph replay) is compared with their sum
    dur = work["dur_us"].to_numpy(dtype=float)[order][linked]
    codes, uniques = pd.factorize(launch_rows)
    work_per_launch = np.bincount(codes, weights=dur, minlength=len(uniques))[codes]
    parts.short_kernels += int(np.sum((work_per_launch < launch_dur)[ok]))


def _idle_gaps(steps: pd.DataFrame, work: pd.DataFrame, rank: int, parts: _Parts) -> None:
    steps = steps[(steps["kernels"].to_numpy() > 0) & (steps["rank"].to_numpy() == rank)]
    if steps.empty or work.empty:
        return
    lo_known = gpu_known_from(work).get(rank, -math.inf)
    lo = np.maximum(steps["start_us"].to_numpy(float), lo_known)
    hi = steps["start_us"].to_numpy(float) + steps["gpu_window_us"].to_numpy(float)
    keep = hi > lo
    win_s, win_e = merge_intervals(lo[keep], hi[keep])
    parts.step_window_us += float(np.sum(win_e - win_s))
    # merged once for every window (merging per window made this O(windows x kernels))
    s, e = merge_intervals(work["ts_us"].to_numpy(float), work["end_us"].to_numpy(float))
    starts, lengths = gaps_merged_many(s, e, win_s, win_e)
    big = lengths >= MIN_IDLE_GAP_US
    parts.gaps.append(lengths[big])
    parts.gap_starts.append(starts[big])


def overhead(events: pd.DataFrame, rank: int | None = None, *,
             steps: pd.DataFrame | None = None) -> Overhead:
    """The overhead picture of one rank, or of all ranks pooled (`rank=None`).

    `steps` may pass an already computed `per_step(events, rank)` to reuse it.
    """
    require_columns(events, NEEDS, "overhead")
    events = events[NEEDS]  # only what is used: filtering copies fewer columns
    events = for_rank(events, rank)
    parts = _Parts()
    if steps is None:
        steps = per_step(events)
    ranks = ranks_of(events)
    for r, ev in by_rank(events):
        work = gpu_work(ev)
        start, end = _window(ev, work)
        parts.window_us += end - start
        if work.empty:
            continue
        parts.busy_us += union_length(work["ts_us"].to_numpy(), work["end_us"].to_numpy(),
                                      start, end)
        comm = work[name_matches(work["name"], COMM_KERNEL)]
        parts.comm_us += union_length(comm["ts_us"].to_numpy(), comm["end_us"].to_numpy(),
                                      start, end)
        _launch_parts(ev, work, parts)
        _idle_gaps(steps, work, r, parts)
    # one rank: its GPU work is the table's (gpu_work copies ~130k rows at 1M events)
    all_work = work if len(ranks) == 1 else gpu_work(events)
    return _assemble(events, rank, parts, steps, len(ranks), all_work)


def _end_of_cycle_syncs(events: pd.DataFrame, syncs: pd.DataFrame) -> np.ndarray:
    """Mask of `syncs`: the device-wide sync a profiling driver issues as the very last thing
    of the last profiler step, so that no kernel of the cycle is lost (autoprof does). It is
    not the program's and does not count as a sync inside steps."""
    mask = np.zeros(len(syncs), dtype=bool)
    device_wide = syncs["name"].isin(("cudaDeviceSynchronize", "cuCtxSynchronize")).to_numpy()
    if not device_wide.any():
        return mask
    last = step_rows(events).groupby("rank").tail(1)
    if last.empty:
        return mask
    # one pass over the table (not one per rank): the other CPU rows of each rank's last step
    step_of, rank_of = events["step"].to_numpy(), events["rank"].to_numpy()
    width = int(max(step_of.max(), last["step_no"].max())) + 2
    key = rank_of * width + (step_of + 1)
    last_key = last["rank"].to_numpy() * width + (last["step_no"].to_numpy() + 1)
    inside = cpu_mask(events) & np.isin(key, last_key)
    inside[events.index.get_indexer(last.index)] = False
    ends = pd.Series(_masked(events, "end_us", inside)).groupby(key[inside]).max()
    final_end = pd.Series(ends.reindex(last_key).fillna(-math.inf).to_numpy(), index=last.index)
    parent_end = final_end.reindex(syncs["parent"].to_numpy()).to_numpy()
    mask |= (device_wide & ~np.isnan(parent_end)
             & (syncs["end_us"].to_numpy() >= np.nan_to_num(parent_end, nan=math.inf)))
    return mask


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.empty(0)


def _assemble(events: pd.DataFrame, rank: int | None, parts: _Parts, steps: pd.DataFrame,
              n_ranks: int, work: pd.DataFrame) -> Overhead:
    self_cpu = float(_masked(events, "self_us", cpu_work_mask(events)).sum())
    self_gpu = float(work["dur_us"].sum())
    syncs = host_syncs(events)
    end_of_cycle = _end_of_cycle_syncs(events, syncs)
    in_steps = syncs[(syncs["step"].to_numpy() >= 0) & ~end_of_cycle]
    lat, disp, queued, gap = (_cat(parts.latencies), _cat(parts.dispatch), _cat(parts.queued),
                              _cat(parts.gaps))
    gap_at = _cat(parts.gap_starts)
    has_gpu = not work.empty
    return Overhead(
        rank=rank,
        ranks=n_ranks,
        steps=len(steps),
        window_us=parts.window_us,
        self_cpu_us=self_cpu,
        self_gpu_us=self_gpu,
        cpu_gpu_ratio=self_cpu / self_gpu if self_gpu > 0 else None,
        gpu_busy_us=parts.busy_us,
        gpu_comm_pct=(100.0 * parts.comm_us / parts.window_us
                      if has_gpu and parts.window_us > 0 else None),
        gpu_busy_pct=(100.0 * parts.busy_us / parts.window_us
                      if has_gpu and parts.window_us > 0 else None),
        kernels=len(work),
        launches=int(steps["launches"].sum()) if not steps.empty else 0,
        launch_latency_us_p50=finite_or_none(quantile(lat, 0.5)),
        launch_latency_us_p90=finite_or_none(quantile(lat, 0.9)),
        launch_latency_us_max=finite_or_none(float(np.max(lat)) if len(lat) else math.nan),
        launch_queued_pct=100.0 * float(np.mean(queued)) if len(queued) else None,
        dispatch_latency_us_p50=finite_or_none(quantile(disp, 0.5)),
        idle_gaps=len(gap),
        idle_gap_total_us=float(np.sum(gap)),
        idle_gap_max_us=float(np.max(gap)) if len(gap) else 0.0,
        idle_gap_max_at_us=float(gap_at[np.argmax(gap)]) if len(gap) else None,
        step_window_us=parts.step_window_us,
        short_kernels=parts.short_kernels,
        host_syncs=len(syncs),
        host_sync_us=float(syncs["dur_us"].sum()),
        host_syncs_in_steps=len(in_steps),
        host_sync_in_steps_us=float(in_steps["dur_us"].sum()),
        step_cpu_span_us_median=finite_or_none(median(steps["cpu_span_us"])),
        step_gpu_work_us_median=finite_or_none(median(steps["gpu_work_us"])),
        # a categorical column counts every category, also those no sync has: keep the ones seen
        sync_names={str(k): int(v) for k, v in syncs["name"].value_counts().items() if v},
    )
