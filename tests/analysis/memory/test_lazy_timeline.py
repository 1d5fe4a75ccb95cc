"""The memory timeline is computed when asked, then kept: the summary (its peaks, steps and
regions, and the memory checks) never finds each event's op, the viewer's tables do, once.
The region-level table the summary reads agrees with the (region, op) one computed later.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import autoprof
from autoprof.analysis.metrics.memory_use import TIMELINE_COLUMNS

DATA = Path(__file__).resolve().parents[2] / "data"
RUNS = [next((DATA / "gpu_h200" / "mem_leak").glob("*/")),
        next((DATA / "gpu_h200_x2" / "runs" / "ddp_straggler").glob("*/"))]
LAZY = ("timeline", "live_at_peak", "by_op", "marks")


@pytest.mark.parametrize("folder", RUNS, ids=lambda p: p.parent.name)
def test_the_summary_computes_no_timeline(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    run = autoprof.load(folder)
    summary = run.summary()
    memory = run.analysis.memory
    assert memory is not None and summary["memory"]["devices"]
    assert [name for name in LAZY if name in vars(memory)] == []
    timeline = run.memory()
    assert list(timeline.columns) == TIMELINE_COLUMNS and len(timeline) == len(run.memory_events)
    assert run.analysis.memory_timeline is timeline  # kept, not computed again


@pytest.mark.parametrize("folder", RUNS, ids=lambda p: p.parent.name)
def test_live_by_region_is_live_at_peak_summed_over_ops(folder: Path) -> None:
    memory = autoprof.load(folder).analysis.memory
    assert memory is not None
    keys = ["rank", "device", "region"]
    eager = memory.live_by_region.groupby(keys)["bytes"].sum()
    lazy = memory.live_at_peak.groupby(keys)["bytes"].sum()
    assert eager.to_dict() == lazy.to_dict() and eager.sum() > 0
    held = memory.by_region.set_index(keys[:2] + ["name"])["live_at_peak_bytes"]
    for (rank, device, region), total in eager.items():
        if (rank, device, region) in held.index:
            assert held.loc[(rank, device, region)] == total
