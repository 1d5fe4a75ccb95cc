"""The memory table: read from [memory] instant events on every decode path, cached with the
events table, and no change at all to the events table."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from support.memory_trace import GIB, cuda_steps, mem, write, x

import autoprof.analysis as analysis
from autoprof.analysis.loader import cache, decode
from autoprof.analysis.loader.chunks import cut_stream
from autoprof.analysis.loader.memory_events import MEMORY_COLUMNS, device_label


def test_device_labels():
    assert device_label(0, -1) == "cpu"
    assert device_label(1, 0) == "cuda:0" and device_label(1, 3) == "cuda:3"
    assert device_label(99, 1) == "device99:1"


def test_columns_and_values(tmp_path):
    path = write(tmp_path / "t.json", [x("ProfilerStep#1", 0, 100),
                                       mem(10, 512, 512, 2 * 1024**2, 77),
                                       mem(20, 1000, 1000, 0, 88, device=-1),
                                       mem(30, -512, 0, 2 * 1024**2, 77)])
    run = analysis.load(path)
    table = run.memory_events
    assert tuple(table.columns) == MEMORY_COLUMNS
    assert table["device"].astype(str).tolist() == ["cuda:0", "cpu", "cuda:0"]
    assert table["bytes"].tolist() == [512, 1000, -512]
    assert table["allocated_bytes"].tolist() == [512, 1000, 0]
    assert table["reserved_bytes"].tolist() == [2 * 1024**2, 0, 2 * 1024**2]
    assert table["addr"].tolist() == [77, 88, 77]


def test_events_table_is_unchanged_by_memory_events(tmp_path):
    spans = [x("ProfilerStep#1", 0, 100), x("aten::empty", 5, 20, cat="cpu_op")]
    with_mem = analysis.load(write(tmp_path / "a.json", spans + [mem(10, 8, 8, 0, 1)]))
    without = analysis.load(write(tmp_path / "b.json", spans))
    pd.testing.assert_frame_equal(with_mem.events, without.events)
    assert len(without.memory_events) == 0 and without.analysis.memory is None


def test_odd_fields_take_the_slow_path_and_keep_memory(tmp_path):
    events = [x("ProfilerStep#1", 0, 100), mem(10, 64, 64, 0, 5), mem(20, -64, 0, 0, 5)]
    events[0]["pid"] = None  # a null field: the chunk is decoded event by event
    bad = mem(30, 1, 1, 0, 6)
    bad["args"]["Bytes"] = None  # unusable: dropped, and counted in the warnings
    run = analysis.load(write(tmp_path / "t.json", events + [bad]))
    assert run.memory_events["bytes"].tolist() == [64, -64]
    assert any("memory events" in w for w in run.load_warnings)


def test_chunked_decode_keeps_every_memory_event(tmp_path, monkeypatch):
    monkeypatch.setattr(decode, "CHUNK_BYTES", 2048)
    events = cuda_steps(steps=3, allocs_per_step=40, size=1024)
    path = write(tmp_path / "t.json", events)
    pieces = cut_stream([path.read_bytes()], decode.CHUNK_BYTES)
    assert sum(kind == "middle" for kind, _ in pieces) > 10
    run = analysis.load(path)
    assert len(run.memory_events) == 3 * 40 * 2
    assert run.memory_events["ts_us"].is_monotonic_increasing


def test_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")
    path = write(tmp_path / "t.json", cuda_steps(steps=2, allocs_per_step=5, size=4096))
    first = analysis.load(path)
    cache.wait_for_writes()
    stored = cache.read_cache(path)
    assert stored is not None and stored.memory is not None
    second = analysis.load(path)
    pd.testing.assert_frame_equal(second.memory_events.astype({"device": str}),
                                  first.memory_events.astype({"device": str}))
    assert second.summary()["memory"] == first.summary()["memory"]


def test_cache_of_a_trace_without_memory_events(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")
    path = write(tmp_path / "t.json", [x("ProfilerStep#1", 0, 100)])
    analysis.load(path)
    cache.wait_for_writes()
    assert cache.read_cache(path).memory is None
    assert len(analysis.load(path).memory_events) == 0


@pytest.mark.parametrize("world", [2])
def test_ranks_keep_their_own_memory(tmp_path, world):
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank in range(world):
        doc = {"traceEvents": cuda_steps(steps=2, allocs_per_step=2, size=1024 * (rank + 1)),
               "distributedInfo": {"rank": rank, "world_size": world}}
        (folder / f"rank{rank}.json").write_text(json.dumps(doc))
    run = analysis.load(folder)
    devices = run.analysis.memory.devices
    assert devices["rank"].tolist() == [0, 1]
    assert devices["peak_allocated_bytes"].tolist() == [1024, 2048]


def test_capacity_from_device_properties(tmp_path):
    path = write(tmp_path / "t.json", cuda_steps(2, 2, 1024, held=GIB), capacity=4 * GIB)
    devices = analysis.load(path).analysis.memory.devices
    assert devices["capacity_bytes"].tolist() == [4 * GIB]
