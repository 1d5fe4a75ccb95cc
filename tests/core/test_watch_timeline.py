"""The step time over all calls, in bounded memory: the points of a long run are at most
MAX_POINTS, each the true mean of its calls' step times; a watcher's memory does not grow with
its calls; the healthy run folder's ``watch.json`` holds the points and the windows, marked
where they began, with their run ids."""

from __future__ import annotations

import json
import random
import tracemalloc

import torch

from autoprof import autoprof
from autoprof.record.watch import Watch
from autoprof.record.watch.timeline import MAX_POINTS, WATCH_FILE, Timeline
from autoprof.record.watch.watcher import Watcher
from tests.core.conftest import manifest, run_dirs


def test_points_stay_bounded_and_each_is_its_calls_mean():
    rng = random.Random(7)
    periods = [rng.randrange(500_000, 2_000_000) for _ in range(20_000)]
    line = Timeline()
    for call, period in enumerate(periods, start=1):
        line.add(call, period)
    assert MAX_POINTS // 2 <= len(line.mean_ms) < MAX_POINTS
    width = line.width
    for first, mean in zip(line.first_calls, line.mean_ms, strict=True):
        chunk = periods[first - 1:first - 1 + width]
        assert len(chunk) == width
        assert abs(mean - sum(chunk) / width / 1e6) < 1e-9


def test_a_cut_point_never_spans_a_window():
    line = Timeline(width=4)
    for call in range(1, 7):
        line.add(call, 1_000_000 * call)
    line.cut()  # calls 5 and 6 become a point of their own
    assert line.first_calls == [1, 5] and line.mean_ms == [2.5, 5.5]


def test_a_watcher_does_not_grow_with_its_calls():
    watcher = Watcher("f", Watch(max_windows=0), 0, lambda trigger: False)
    now = 0
    for _ in range(5_000):  # past the first merges: the lists are at their size
        now += 1_000_000
        watcher.tick(now)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(100_000):
            now += 1_000_000
            watcher.tick(now)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 64 * 1024  # 100k calls: not a byte a call (a list would be 800k)


def test_watch_json_marks_the_windows(traces_root):
    @autoprof(name="marked", activities=["cpu"], watch={"at_calls": [40, 70]})
    def f(x):
        return x * 2

    for _ in range(100):
        f(torch.ones(4))
    autoprof.flush()
    watcher = f.autoprof_session.watcher
    for window in watcher.opened:
        window.flush()
    healthy, *triggered = sorted(run_dirs(traces_root, "marked"),
                                 key=lambda r: manifest(r)["started_at"])
    data = json.loads((healthy / WATCH_FILE).read_text())
    assert data["name"] == "marked" and data["healthy_run_id"] == healthy.name
    assert [w["at_call"] for w in data["windows"]] == [40, 70]
    assert sorted(w["run_id"] for w in data["windows"]) == sorted(r.name for r in triggered)
    calls = [c for c, _ in data["points"]]
    assert calls == sorted(calls) and calls[0] > data["first_window_calls"]
    for window in data["windows"]:  # no point falls inside a window
        inside = range(window["at_call"], window["at_call"] + window["calls"])
        assert not any(c in inside for c in calls), (window, calls)


def test_a_garbled_watch_file_is_left_out(tmp_path):
    from autoprof.runfolder import watchfile

    (tmp_path / "healthy").mkdir()
    (tmp_path / "healthy" / WATCH_FILE).write_text("{not json")
    assert watchfile.read(tmp_path / "healthy" / WATCH_FILE) is None
    triggered = tmp_path / "triggered"
    triggered.mkdir()
    for healthy_id in ("../healthy", "healthy"):
        (triggered / "manifest.json").write_text(
            json.dumps({"trigger": {"healthy_run_id": healthy_id}}))
        found = watchfile.find(triggered)
        assert found == (None if "/" in healthy_id else tmp_path / "healthy" / WATCH_FILE)
    (tmp_path / "healthy" / WATCH_FILE).write_text(json.dumps(
        {"name": "f", "points": [[5, 1.5], ["x", 2], [6, float("inf")]],
         "windows": [{"at_call": 9, "kind": "drift"}, "junk"]}))
    log = watchfile.read(tmp_path / "healthy" / WATCH_FILE)
    assert log is not None and log.points == ((5, 1.5),)
    assert [(w.at_call, w.kind, w.run_id) for w in log.windows] == [(9, "drift", None)]
