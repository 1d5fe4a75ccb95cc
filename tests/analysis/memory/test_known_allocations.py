"""Real CPU traces with allocations of known sizes in named regions (_record.py): peak,
per-step and per-region bytes and growth come out exactly (the CPU allocator reports the
bytes asked for). The CPU totals count from what earlier profiled allocations left behind in
this process (``base``: the first step's start), so every level is checked above it."""

from __future__ import annotations

from support.memory_record import KEEP, SCRATCH, TEMP

import autoprof.analysis as analysis

STEP_PEAK = KEEP + TEMP + SCRATCH


def _memory(path):
    run = analysis.load(path)
    memory = run.analysis.memory
    assert memory is not None
    return run, memory


def _base(memory) -> int:
    return int(memory.steps.sort_values("step")["start_allocated_bytes"].iat[0])


def test_peak_is_the_last_steps_scratch(leak_trace):
    _, memory = _memory(leak_trace)
    [cpu] = memory.devices.to_dict(orient="records")
    assert cpu["device"] == "cpu"
    # two earlier steps' keeps are held, and this step's keep, temp and scratch
    assert cpu["peak_allocated_bytes"] == _base(memory) + 2 * KEEP + STEP_PEAK
    assert cpu["peak_step"] == 2
    at = memory.timeline[memory.timeline["ts_us"] == cpu["peak_ts_us"]].iloc[0]
    assert at["region"] == "scratch" and at["bytes"] == SCRATCH
    assert (cpu["allocations"], cpu["frees"]) == (9, 6)


def test_steps_start_peak_end_and_growth(leak_trace):
    _, memory = _memory(leak_trace)
    steps = memory.steps.sort_values("step")
    base = _base(memory)
    assert steps["step"].tolist() == [0, 1, 2]
    assert steps["start_allocated_bytes"].tolist() == [base, base + KEEP, base + 2 * KEEP]
    assert steps["end_allocated_bytes"].tolist() == [base + k * KEEP for k in (1, 2, 3)]
    assert steps["peak_bytes"].tolist() == [base + k * KEEP + STEP_PEAK for k in range(3)]
    assert steps["growth_bytes"].tolist() == [KEEP] * 3
    assert steps["allocated_bytes"].tolist() == [STEP_PEAK] * 3
    assert steps["freed_bytes"].tolist() == [TEMP + SCRATCH] * 3
    assert steps["allocations"].tolist() == [3] * 3


def test_regions_bytes_per_step_and_peak_inside(leak_trace):
    _, memory = _memory(leak_trace)
    base = _base(memory)
    rows = memory.by_region.set_index("name")
    assert rows.index.tolist() == ["keep", "temp", "scratch"]  # largest first
    assert rows.loc["keep", "allocated_bytes_per_step"] == KEEP
    assert rows.loc["temp", "allocated_bytes_per_step"] == TEMP
    assert rows.loc["scratch", "allocated_bytes_per_step"] == SCRATCH
    assert rows.loc["scratch", "peak_bytes"] == base + 2 * KEEP + STEP_PEAK
    assert rows.loc["temp", "peak_bytes"] == base + 3 * KEEP + TEMP
    assert rows.loc["keep", "peak_bytes"] == base + 3 * KEEP
    # what was live at the peak: every keep, this step's temp and scratch
    assert rows.loc["keep", "live_at_peak_bytes"] == 3 * KEEP
    assert rows.loc["temp", "live_at_peak_bytes"] == TEMP
    assert rows.loc["scratch", "live_at_peak_bytes"] == SCRATCH
    assert set(memory.by_op["name"]) == {"aten::empty"}


def test_no_leak_no_growth(steady_trace):
    run, memory = _memory(steady_trace)
    steps, base = memory.steps, _base(memory)
    assert steps["growth_bytes"].tolist() == [0, 0, 0]
    assert steps["end_allocated_bytes"].tolist() == [base] * 3
    # keep is freed at once: the peak is keep alone (4 MiB > temp + scratch, 3 MiB)
    assert int(memory.devices["peak_allocated_bytes"].iat[0]) == base + KEEP
    assert steps["peak_bytes"].tolist() == [base + KEEP] * 3
    ids = {d.id for d in run.diagnostics()}
    assert "memory-growth" not in ids and "near-capacity" not in ids


def test_leak_fires_memory_growth_with_evidence(leak_trace):
    run, _ = _memory(leak_trace)
    [growth] = [d for d in run.diagnostics() if d.id == "memory-growth"]
    assert growth.evidence["growth_bytes_per_step"] == KEEP
    assert growth.evidence["growth_bytes_total"] == 3 * KEEP
    assert growth.evidence["top_site"] == {"region": "keep", "bytes": 3 * KEEP}
    assert "keep" in growth.message and "empty_cache" in growth.hint
    assert not [d for d in run.diagnostics() if d.id in ("near-capacity", "allocator-churn")]


def test_timeline_method(leak_trace):
    run, memory = _memory(leak_trace)
    tl = run.memory()
    assert {"ts_us", "device", "allocated_bytes", "reserved_bytes"} <= set(tl.columns)
    assert len(tl) == 15 and tl["ts_us"].is_monotonic_increasing
    assert int(tl["allocated_bytes"].max()) == _base(memory) + 2 * KEEP + STEP_PEAK
