"""The memory checks: memory-growth, near-capacity, allocator-churn (metrics/memory.py numbers).

Thresholds are module constants; docs/analysis.md ("Memory") explains each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.records import Check, Diagnostic
from autoprof.analysis.metrics.memory_use import BEFORE_WINDOW, Memory
from autoprof.units import fmt_bytes

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis

GROWTH_MIN_STEPS = 2  # steps with memory events on the device
GROWTH_MIN_TOTAL_BYTES = 64 * 1024  # below this, a rise is allocator noise, not a leak
NEAR_CAPACITY_SHARE = 0.90  # peak reserved / device memory
NEAR_CAPACITY_CRITICAL_SHARE = 0.97
CHURN_ALLOCS_PER_STEP = 5000
FRAGMENTATION_RATIO = 1.5  # peak reserved / peak allocated
FRAGMENTATION_MIN_BYTES = 1024**3  # ... and reserved at least this much above allocated

_MEMORY_HINT = ("Lower the peak: a smaller batch, activation checkpointing "
                "(torch.utils.checkpoint), mixed precision, optimizer.zero_grad(set_to_none=True). "
                "torch.cuda.empty_cache() is not a fix: it returns cached blocks to the driver "
                "and the next step takes them back.")


def _has_memory(ctx: Analysis) -> bool:
    return ctx.memory is not None


def _memory(ctx: Analysis) -> Memory:
    if ctx.memory is None:
        raise ValueError("memory checks need memory events (record with profile_memory=True)")
    return ctx.memory


def _top_site(mem: Memory, rank: int, device: str) -> dict[str, Any] | None:
    """The region that holds most of what was live at the device's peak (recorded ones)."""
    live = mem.live_by_region  # by region only: the op of each event is not needed here
    mine = live[(live["rank"] == rank) & (live["device"] == device)
                & (live["region"] != BEFORE_WINDOW)]
    if not len(mine):
        return None
    by_region = mine.groupby("region")["bytes"].sum().sort_values(ascending=False)
    return {"region": str(by_region.index[0]), "bytes": int(by_region.iloc[0])}


# --- memory-growth ------------------------------------------------------------------------

def _growing(steps: pd.DataFrame) -> list[tuple[int, str, pd.DataFrame]]:
    found = []
    for (rank, device), rows in steps.groupby(["rank", "device"], sort=True):
        rows = rows.sort_values("step")
        growth = rows["growth_bytes"].to_numpy()
        total = int(rows["end_allocated_bytes"].iloc[-1] - rows["start_allocated_bytes"].iloc[0])
        if (len(rows) >= GROWTH_MIN_STEPS and bool((growth > 0).all())
                and total >= GROWTH_MIN_TOTAL_BYTES):
            found.append((int(rank), str(device), rows))
    return found


def _memory_growth(ctx: Analysis) -> Diagnostic | None:
    mem = _memory(ctx)
    found = _growing(mem.steps)
    if not found:
        return None
    rank, device, rows = max(found, key=lambda f: int(f[2]["growth_bytes"].sum()))
    per_step = float(np.median(rows["growth_bytes"].to_numpy()))
    first = int(rows["start_allocated_bytes"].iloc[0])
    last = int(rows["end_allocated_bytes"].iloc[-1])
    site = _top_site(mem, rank, device)
    where = f"; the region holding most at the peak: {site['region']!r}" if site else ""
    evidence: dict[str, Any] = {
        "device": device, "rank": rank, "steps": len(rows),
        "growth_bytes_per_step": int(per_step), "growth_bytes_total": last - first,
        "start_allocated_bytes": first, "end_allocated_bytes": last,
        "devices_growing": [d for _, d, _ in found], "top_site": site,
    }
    return Diagnostic(
        id="memory-growth",
        severity="warning",
        message=(f"Live memory on {device} rises in every profiled step: "
                 f"{fmt_bytes(first)} at the start of the first, {fmt_bytes(last)} at the end "
                 f"of the last ({len(rows)} steps, {fmt_bytes(per_step)} per step){where}. "
                 "Something keeps a reference from each step: this runs out of memory in time."),
        evidence=evidence,
        hint=("Find what each step keeps: tensors appended to a list (store loss.item() or "
              "t.detach().cpu(), not the tensor with its graph), caches keyed by step, "
              "hooks that save outputs. torch.cuda.empty_cache() does not free memory that is "
              "still referenced."),
    )


# --- near-capacity ------------------------------------------------------------------------

def _near_capacity(ctx: Analysis) -> Diagnostic | None:
    devices = _memory(ctx).devices
    known = devices[devices["reserved_pct"].notna()]
    if not len(known):
        return None
    share = known["reserved_pct"].to_numpy(float) / 100
    worst = int(np.argmax(share))
    if share[worst] < NEAR_CAPACITY_SHARE:
        return None
    row = known.iloc[worst]
    capacity = int(row["capacity_bytes"])
    return Diagnostic(
        id="near-capacity",
        severity="critical" if share[worst] >= NEAR_CAPACITY_CRITICAL_SHARE else "warning",
        message=(f"{row['device']} reserved {fmt_bytes(row['peak_reserved_bytes'])} at its "
                 f"peak, {100 * share[worst]:.1f}% of its {fmt_bytes(capacity)} (allocated "
                 f"{fmt_bytes(row['peak_allocated_bytes'])}): a slightly larger batch or "
                 "input runs out of memory."),
        evidence={"device": str(row["device"]), "rank": int(row["rank"]),
                  "peak_reserved_bytes": int(row["peak_reserved_bytes"]),
                  "peak_allocated_bytes": int(row["peak_allocated_bytes"]),
                  "capacity_bytes": capacity, "reserved_pct": round(100 * float(share[worst]), 2),
                  "threshold_pct": 100 * NEAR_CAPACITY_SHARE},
        hint=_MEMORY_HINT,
    )


# --- allocator-churn ----------------------------------------------------------------------

def _allocator_churn(ctx: Analysis) -> Diagnostic | None:
    mem = _memory(ctx)
    parts: list[str] = []
    evidence: dict[str, Any] = {}
    steps = mem.steps
    if len(steps):
        per_step = steps.groupby(["rank", "device"])["allocations"].median()
        busy = per_step[per_step >= CHURN_ALLOCS_PER_STEP]
        if len(busy):  # the busiest device; on a tie a GPU before the CPU
            ranked = sorted(busy.items(), key=lambda kv: (-kv[1], kv[0][1] == "cpu"))
            (rank, device), count = ranked[0][0], float(ranked[0][1])
            parts.append(f"{device} makes {count:.0f} allocations per step")
            evidence.update(device=str(device), rank=int(rank), allocations_per_step=count,
                            allocations_threshold=CHURN_ALLOCS_PER_STEP)
    dev = mem.devices[mem.devices["peak_reserved_bytes"].notna()]
    dev = dev.assign(peak_reserved_bytes=dev["peak_reserved_bytes"].astype(np.int64))
    gap = dev["peak_reserved_bytes"] - dev["peak_allocated_bytes"]
    frag = dev[(dev["peak_reserved_bytes"] >= FRAGMENTATION_RATIO * dev["peak_allocated_bytes"])
               & (gap >= FRAGMENTATION_MIN_BYTES)]
    if len(frag):
        row = frag.loc[gap[frag.index].idxmax()]
        parts.append(f"{row['device']} reserves {fmt_bytes(row['peak_reserved_bytes'])} for a "
                     f"peak of {fmt_bytes(row['peak_allocated_bytes'])} allocated")
        evidence.update(fragmented_device=str(row["device"]),
                        peak_reserved_bytes=int(row["peak_reserved_bytes"]),
                        peak_allocated_bytes=int(row["peak_allocated_bytes"]),
                        reserved_ratio_threshold=FRAGMENTATION_RATIO)
    if not parts:
        return None
    return Diagnostic(
        id="allocator-churn",
        severity="info",
        message=("The caching allocator is working hard (many small blocks, or cached memory "
                 "it cannot reuse): " + "; ".join(parts) + "."),
        evidence=evidence,
        hint=("Allocate less per step: preallocate and reuse buffers (out= arguments, in-place "
              "ops), optimizer.zero_grad(set_to_none=True), avoid shapes that change every "
              "step. For fragmentation set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; "
              "empty_cache() only hides it until the next step."),
    )


MEMORY_CHECKS: tuple[Check, ...] = (
    Check("memory-growth", "needs memory events (profile_memory=True) in profiler steps",
          _has_memory, _memory_growth),
    Check("near-capacity", "needs memory events and the device's memory size",
          _has_memory, _near_capacity),
    Check("allocator-churn", "needs memory events (profile_memory=True)",
          _has_memory, _allocator_churn),
)
