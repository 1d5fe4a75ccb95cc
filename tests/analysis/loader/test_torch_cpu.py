"""CPU traces made here with torch.profiler: the events table's per-op Self CPU and CPU total
agree with torch's own key_averages for the same run.

Tolerance: Kineto writes ts and dur in microseconds rounded to 1 ns, and key_averages works
on the unrounded nanosecond values, so each event can differ by up to ~2 ns (ts and dur are
rounded separately, and a parent's self time subtracts each child's rounding too). We allow
4 ns per call of the op plus its children's calls; anything beyond that would be a real
difference in nesting, not rounding.

torch's EventList drops an op whose parent has the same name and no other child (the
dispatcher records ``aten::sum`` inside ``aten::sum``) and lifts its children to the parent;
the events table keeps every X event, so calls and CPU total are compared after the same
merge. Self CPU sums per name are unaffected by it.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from autoprof.analysis import load

torch = pytest.importorskip("torch")


def _workload(steps: int, profiler) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    x = torch.randn(16, 64)
    for _ in range(steps):
        with torch.profiler.record_function("train_step"):
            loss = model(x).sum()
            loss.backward()
        profiler.step()


@pytest.fixture(scope="module")
def cpu_profile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cpu_trace")
    path = folder / "cpu.pt.trace.json"
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=3)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=schedule, record_shapes=True) as prof:
        _workload(5, prof)
    prof.export_chrome_trace(str(path))
    averages = {e.key: e for e in prof.key_averages()}
    return path, averages


def test_self_and_total_agree_with_key_averages(cpu_profile):
    path, averages = cpu_profile
    events = load(path).events
    cpu = events[events["lane"] == "cpu"]
    names = cpu["name"].to_numpy()
    parent = cpu["parent"].to_numpy()
    n_children = np.bincount(parent[parent >= 0], minlength=len(events))
    duplicate = (parent >= 0) & (names == events["name"].to_numpy()[np.maximum(parent, 0)]) & (
        n_children[np.maximum(parent, 0)] == 1)
    kept = cpu[~duplicate]
    self_by_name = cpu.groupby("name")["self_us"].sum()
    by_name = kept.groupby("name").agg(total_us=("dur_us", "sum"), calls=("name", "size"))
    checked = 0
    merged = 0
    for key, avg in averages.items():
        if key not in by_name.index or avg.count == 0:
            continue
        row = by_name.loc[key]
        assert int(row["calls"]) == avg.count, key
        kids = int(n_children[cpu.index[names == key]].sum())
        tolerance_us = 0.004 * (avg.count + kids)
        assert self_by_name[key] == pytest.approx(avg.self_cpu_time_total, abs=tolerance_us), key
        assert row["total_us"] == pytest.approx(avg.cpu_time_total, abs=0.004 * avg.count), key
        checked += 1
        merged += int((names[duplicate] == key).sum())
    assert checked >= 10
    assert merged > 0  # the merge rule above was exercised
    assert events["step"].max() >= 3 and set(events["step"].unique()) >= {2, 3, 4}


def test_cpu_trace_has_no_gpu_rows_and_backward_thread_rows_nest(cpu_profile):
    path, _ = cpu_profile
    run = load(path)
    assert not run.is_cuda
    events = run.events
    assert (events["lane"] == "cpu").all() and not events["is_gpu_work"].any()
    assert (events["launch_row"] == -1).all() and (events["correlation"] == -1).all()
    for (_, _), group in events.groupby(["pid", "tid"]):
        assert (group["depth"] == 0).any()


def test_tensorboard_handler_gz_loads_like_the_plain_export(tmp_path):
    handler = torch.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="rank2",
                                                      use_gzip=True)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=2)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=schedule, on_trace_ready=handler) as prof:
        _workload(3, prof)
    [trace] = sorted(tmp_path.glob("*.pt.trace.json.gz"))
    run = load(trace)
    assert set(run.events["rank"]) == {2}  # from the worker name
    raw = json.loads(gzip.decompress(trace.read_bytes()))
    complete = sum(1 for e in raw["traceEvents"] if e.get("ph") == "X")
    assert len(run.events) == complete
    assert load(tmp_path).events.equals(run.events)
