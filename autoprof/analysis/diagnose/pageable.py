"""`pageable_copies`: host-to-device copies from pageable memory, offered as pinned memory.

A copy from pageable host memory (the GPU row `Memcpy HtoD (Pageable -> Device)`) cannot run
behind the host: the driver stages it through a pinned buffer of its own, and the host waits
in the copy call (`cudaMemcpyAsync`) until the data is staged, whatever `non_blocking` says.
The breakdown puts that wait in `host_launch` (the call is a launch), so no bucket names it
and a CUDA graph is offered for it. This entry finds it from the copies themselves:

- evidence: GPU copies named `Pageable -> Device` launched inside the profiled steps, and
  their launch calls; `us_per_step` is the host time held in those calls (what pinning frees:
  the host no longer stages nor waits), `max_speedup` the step without it;
- fix: `pin-memory` (`x.pin_memory()` or `DataLoader(pin_memory=True)`, then
  `.to(device, non_blocking=True)`; the hint adds: tensors copied every step that fit in
  GPU memory moved to the GPU once, before the loop), replayed (`NonBlockingCopies`): each
  call costs a launch, the host goes on, and each copy runs `copy_speedup` times faster on
  the GPU: the pinned rate over these copies' median rate (copies of at least
  MIN_RATE_BYTES), the pinned rate being the faster of the device's link
  (metrics/host_link.py: 48 GB/s on PCIe 5.0, measured on the H200) and the fastest
  host-to-device copy of the trace;
- where: the op that made the copies (`aten::to`, `aten::copy_`), outermost under its region.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.host_link import HostLink, host_link
from autoprof.analysis.metrics.stats import cpu_mask, name_matches

PAGEABLE_HTOD = "Memcpy HtoD (Pageable"
HTOD = "Memcpy HtoD"
MIN_RATE_BYTES = 65536  # a smaller copy's rate is its fixed cost, not the link's
_OP = "aten::"


def _gpu_copies(events: pd.DataFrame, prefix: str) -> pd.DataFrame:
    named = name_matches(events["name"], re.compile("^" + re.escape(prefix)))
    return events[events["is_gpu_work"].to_numpy(dtype=bool) & named]


def pageable_rows(events: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pageable host-to-device copies launched inside profiled steps, and their launch
    calls (rows of `events`, aligned)."""
    copies = _gpu_copies(events, PAGEABLE_HTOD)
    launch = copies["launch_row"].to_numpy()
    known = (launch >= 0) & np.isin(launch, events.index.to_numpy())
    copies = copies[known]
    calls = events.loc[copies["launch_row"].to_numpy()]
    inside = (calls["step"].to_numpy() >= 0) & cpu_mask(calls)
    return copies[inside], calls[inside]


def _rated(copies: pd.DataFrame) -> pd.DataFrame:
    """The copies whose rate is the link's (MIN_RATE_BYTES or more, a duration)."""
    return copies[(copies["bytes"].fillna(0) >= MIN_RATE_BYTES) & (copies["dur_us"] > 0)]


def copy_speedup(events: pd.DataFrame, copies: pd.DataFrame,
                 link: HostLink | None = None) -> float:
    """How much faster a pinned copy would run than these copies' median rate: the faster of
    `link`'s pinned rate (None: not used) and the trace's fastest host-to-device copy (both in
    bytes per us), over that median; 1.0 when neither is faster or the copies have no
    rate."""
    if "bytes" not in copies.columns:
        return 1.0
    big = _rated(copies)
    if big.empty:
        return 1.0
    own = float(np.median(big["bytes"] / big["dur_us"]))
    every = _rated(_gpu_copies(events, HTOD))
    best = float((every["bytes"] / every["dur_us"]).max()) if not every.empty else 0.0
    if link is not None:
        best = max(best, link.pinned_gbps * 1e3)  # GB/s -> bytes per us
    return max(1.0, best / own) if own > 0 else 1.0


def _maker(events: pd.DataFrame, row: int) -> str:
    """The outermost `aten::` op above a launch call (the op the user's line called)."""
    names = events["name"]
    parents = events["parent"]
    best = str(names.at[row])
    at = int(parents.at[row]) if pd.notna(parents.at[row]) else -1
    while at >= 0 and at in events.index:
        name = str(names.at[at])
        if name.startswith(_OP):
            best = name
        at = int(parents.at[at]) if pd.notna(parents.at[at]) else -1
    return best


def pageable_copies(events: pd.DataFrame, n_steps: int, step_us: float,
                    device: str | None = None) -> tuple[dict[str, Any], float] | None:
    """The `pageable_copies` opportunity (before its prediction) and the copy speed-up the
    replay gives pinned copies (at `device`'s link, metrics/host_link.py: PCIe 4.0 when not
    known); None when the steps make no pageable host-to-device copy."""
    copies, calls = pageable_rows(events)
    if copies.empty or not n_steps or not step_us > 0:
        return None
    us = float(calls["dur_us"].sum()) / n_steps
    gpu_us = float(copies["dur_us"].sum()) / n_steps
    makers = pd.Series([_maker(events, int(r)) for r in calls.index], dtype=object)
    per_maker = calls["dur_us"].groupby(makers.to_numpy()).sum().sort_values(ascending=False)
    where = [{"name": str(n), "us_per_step": float(v) / n_steps}
             for n, v in per_maker.head(3).items()]
    link = host_link(device)
    speedup = copy_speedup(events, copies, link)
    hint = (f"{len(copies) / n_steps:g} host-to-device copies a step come from pageable "
            f"memory: the host stages each one and waits in the copy call "
            f"({us:.0f} us a step; the copies run {gpu_us:.0f} us on the GPU). Pin the source "
            "(x.pin_memory() once, a preallocated pinned buffer, or "
            "DataLoader(pin_memory=True)) and copy with .to(device, non_blocking=True); "
            "where the same host tensors are copied every step and fit in GPU memory, move "
            "them to the GPU once, before the loop, and index them there")
    opp = {"cause": "pageable_copies", "us_per_step": us,
           "pct_of_step": 100.0 * us / step_us,
           "max_speedup": step_us / (step_us - us) if step_us > us else None,
           "where": where, "hint": hint,
           "evidence": {"copies_per_step": len(copies) / n_steps,
                        "copy_gpu_us_per_step": gpu_us,
                        "copy_bytes_per_step": float(copies["bytes"].fillna(0).sum()) / n_steps
                        if "bytes" in copies.columns else None,
                        "pinned_copy_speedup": speedup,
                        "link": link.name, "pinned_gbps": link.pinned_gbps}}
    return opp, speedup
