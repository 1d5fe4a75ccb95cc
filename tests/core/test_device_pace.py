"""The watcher's device clock (``record.watch.device_pace``) on a simulated CUDA stream (no
torch, no GPU): the host enqueues each call's device work and runs ahead until a sync; an
event's time is when the device reaches it. Where the device paces the job and the loop syncs
every 50 calls, the host's time per call misses a device-bound slowdown that the device's
clock sees; the events are never waited for, a call in a capture records none, and no step
time spans a gap."""

from __future__ import annotations

import statistics
from types import SimpleNamespace
from typing import Any

import pytest

from autoprof.record.watch import Watch
from autoprof.record.watch.device_pace import POOL, STRIDE, DeviceWatcher, EventPace
from autoprof.record.watch.watcher import Trigger, Watcher
from autoprof.runfolder import watchfile

MS = 1_000_000
WATCH = Watch(threshold_pct=20.0, drift_calls=20, baseline_calls=50, cooldown_calls=1000)


class Stream:
    """One CUDA stream's clock against the host's (ns): work queued at ``host_ns`` starts
    when the device is free; the host waits only at a sync."""

    def __init__(self) -> None:
        self.host_ns = 0
        self.free_ns = 0  # when the device has finished everything queued so far
        self.capturing = False
        self.made = 0  # events created
        self.recorded = 0  # events recorded

    def launch(self, host_ms: float, device_ms: float) -> None:
        start = max(self.free_ns, self.host_ns)
        self.free_ns = start + int(device_ms * MS)
        self.host_ns += int(host_ms * MS)

    def sync(self) -> None:
        self.host_ns = max(self.host_ns, self.free_ns)

    # the part of torch.cuda the pace reads
    def is_current_stream_capturing(self) -> bool:
        return self.capturing

    def Event(self, enable_timing: bool) -> Event:  # noqa: N802 -- torch.cuda.Event
        assert enable_timing
        self.made += 1
        return Event(self)


class Event:
    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.at_ns: int | None = None

    def record(self) -> None:
        self.at_ns = max(self.stream.free_ns, self.stream.host_ns)
        self.stream.recorded += 1

    def query(self) -> bool:
        assert self.at_ns is not None
        return self.stream.host_ns >= self.at_ns

    def elapsed_time(self, end: Event) -> float:
        assert self.at_ns is not None and end.at_ns is not None and end.query()
        return (end.at_ns - self.at_ns) / MS


def _run(watcher: Watcher, stream: Stream, calls: int, host_ms: float,
         device_ms: Any, sync_every: int = 50) -> tuple[list[int], list[float]]:
    """``calls`` calls of a loop that syncs every ``sync_every`` calls; ``device_ms(call)``
    the device's work of a call. The calls that began a window, and the host's step times."""
    began, host_steps = [], []
    last = stream.host_ns
    for i in range(1, calls + 1):
        now = stream.host_ns
        if i > 1:
            host_steps.append((now - last) / MS)
        last = now
        if watcher.tick(now):
            began.append(watcher.calls)
            watcher.window_over(0)
        stream.launch(host_ms, device_ms(watcher.calls))
        if i % sync_every == 0:
            stream.sync()
    return began, host_steps


def _start(started: list[Trigger]) -> Any:
    def start(trigger: Trigger) -> bool:
        started.append(trigger)
        return True

    return start


def test_the_events_time_the_device_pace_where_the_host_runs_ahead():
    stream = Stream()
    pace = EventPace(stream)
    periods = []
    for call in range(1, 301):
        pace.record(call)
        period = pace.finished()
        if period is not None:
            periods.append(period / MS)
        stream.launch(1.0, 2.0)  # the device takes twice the host's time
        if call % 50 == 0:
            stream.sync()
    assert len(periods) > 250
    assert statistics.median(periods) == pytest.approx(2.0, rel=0.01)


def test_a_device_bound_slowdown_hidden_from_the_host_clock_is_a_drift_on_the_device():
    slow_at = 400

    def device_ms(call: int) -> float:
        return 1.0 if call < slow_at else 1.7  # +70%, the host's own cost unchanged

    started_host: list[Trigger] = []
    host = Watcher("f", WATCH, 10, _start(started_host))
    began_host, host_steps = _run(host, Stream(), 700, 0.9, device_ms)
    after = [s for i, s in enumerate(host_steps, start=12) if i >= slow_at + 5]
    # the host clock: most calls take the host's 0.9 ms, the sync every 50 pays the backlog
    assert statistics.median(after) == pytest.approx(0.9, rel=0.05)
    assert began_host == []

    started: list[Trigger] = []
    device = DeviceWatcher("f", WATCH, 10, _start(started), Stream())
    began, _ = _run(device, device._pace._cuda, 700, 0.9, device_ms)
    assert len(began) == 1 and slow_at < began[0] <= slow_at + 100
    trigger = started[0]
    assert trigger.kind == "drift" and trigger.baseline_ms is not None
    assert trigger.current_ms is not None
    assert trigger.current_ms / trigger.baseline_ms == pytest.approx(1.7, rel=0.1)
    assert device.clock == watchfile.DEVICE_CLOCK != host.clock


def test_where_the_host_is_slower_the_device_clock_reads_the_host_pace():
    stream = Stream()
    device = DeviceWatcher("f", WATCH, 10, _start([]), stream)
    _run(device, stream, 200, 2.0, lambda call: 0.5)
    assert device.baseline_ns == pytest.approx(2.0 * MS, rel=0.01)


def test_no_event_in_a_capture_and_no_step_time_across_the_gap():
    stream = Stream()
    pace = EventPace(stream)
    pace.record(1)
    stream.launch(1.0, 1.0)
    stream.capturing = True
    pace.record(2)  # inside a CUDA graph's capture: no event
    stream.launch(1.0, 1.0)
    stream.capturing = False
    pace.record(3)
    stream.launch(1.0, 1.0)
    pace.record(4)
    stream.sync()
    assert stream.made == 3
    assert pace.finished() == 1 * MS  # 3 -> 4; 1 -> 3 spans the gap and is dropped
    assert pace.finished() is None


def test_events_are_reused_and_never_more_than_the_pool_in_flight():
    stream = Stream()
    pace = EventPace(stream)
    for call in range(1, POOL + 50):  # the device never catches up: no sync
        pace.record(call)
        stream.launch(0.1, 100.0)
        assert pace.finished() is None
    assert stream.made == POOL
    stream.sync()
    assert pace.finished() == 100 * MS
    for call in range(POOL + 50, POOL + 60):
        pace.record(call)
    assert stream.made == POOL  # the freed event was reused


def test_a_window_forgets_the_events_in_flight():
    stream = Stream()
    pace = EventPace(stream)
    pace.record(1)
    stream.launch(1.0, 1.0)
    pace.restart()
    pace.record(2)
    stream.sync()
    assert pace.finished() is None


def test_the_clock_option_is_checked_and_older_watch_files_read_as_the_host():
    assert Watch().clock == "auto" and Watch.coerce({"clock": "host"}) == Watch(clock="host")
    with pytest.raises(ValueError, match="Watch.clock"):
        Watch(clock="gpu")
    log = watchfile._parse({"name": "f", "points": [[1, 1.0]]})
    assert log.clock == watchfile.HOST_CLOCK
    log = watchfile._parse({"name": "f", "clock": watchfile.DEVICE_CLOCK})
    assert log.clock == watchfile.DEVICE_CLOCK


def test_the_device_clock_is_chosen_only_where_the_window_recorded_cuda_and_clock_allows(
        monkeypatch):
    from autoprof.record.watch import window

    stream = Stream()
    monkeypatch.setattr(window, "torch_module", lambda: SimpleNamespace(cuda=stream))
    run = SimpleNamespace(uses_cuda=True, steps_done=3, after_window_call_ms=[1.0], pace=None)
    session = SimpleNamespace(name="f", warmup_call_ms=[1.0, 1.0], _run=run)

    def start(trigger: Trigger) -> bool:
        return True

    monkeypatch.setattr(window, "cuda_in_use", lambda: True)
    chosen = window._watcher(session, Watch(), start)
    assert isinstance(chosen, DeviceWatcher) and chosen.calls == 6
    assert type(window._watcher(session, Watch(clock="host"), start)) is Watcher
    run.uses_cuda = False  # the window recorded the CPU only
    assert type(window._watcher(session, Watch(), start)) is Watcher
    run.uses_cuda = True
    monkeypatch.setattr(window, "cuda_in_use", lambda: False)  # CUDA never started
    assert type(window._watcher(session, Watch(), start)) is Watcher


class _CApi:
    """The part of ``torch._C`` the clock's fast calls read: the current device and its
    current stream's raw handle, a capture flag, and the event base's ``record``."""

    def __init__(self) -> None:
        self.device, self.raw = 0, 1000
        self.capturing = False
        self.recorded: list[tuple[Any, Any]] = []
        api = self

        class EventBase:
            @staticmethod
            def record(event: Any, stream: Any) -> None:
                api.recorded.append((event, stream))

        self._CudaEventBase = EventBase

    def _cuda_isCurrentStreamCapturing(self) -> bool:  # noqa: N802 -- torch._C's name
        return self.capturing

    def _cuda_getDevice(self) -> int:  # noqa: N802
        return self.device

    def _cuda_getCurrentRawStream(self, device: int) -> int:  # noqa: N802
        assert device == self.device
        return self.raw


def test_the_fast_calls_keep_the_stream_until_the_current_stream_changes():
    c_api, made = _CApi(), []

    def current_stream() -> tuple[int, int]:
        made.append((c_api.device, c_api.raw))
        return made[-1]

    cuda = SimpleNamespace(current_stream=current_stream, Event=lambda enable_timing: object())
    pace = EventPace(cuda, c_api)
    for call in range(5):
        pace.record(call)
    assert made == [(0, 1000)]  # asked once, not per call
    c_api.raw = 2000  # the user switched streams (with torch.cuda.stream(s): ...)
    pace.record(5)
    c_api.device, c_api.raw = 1, 3000  # another device
    pace.record(6)
    assert made == [(0, 1000), (0, 2000), (1, 3000)]
    assert [stream for _, stream in c_api.recorded] == [(0, 1000)] * 5 + [(0, 2000), (1, 3000)]
    c_api.capturing = True  # a CUDA graph capture: no event
    pace.record(7)
    assert len(c_api.recorded) == 7


def test_without_the_fast_calls_the_public_ones_are_used():
    stream = Stream()
    pace = EventPace(stream, SimpleNamespace())  # a torch._C without them
    pace.record(1)
    assert stream.made == 1


def test_the_watcher_records_an_event_every_stride_calls_and_each_call_gets_their_mean():
    assert STRIDE > 1
    stream = Stream()
    device = DeviceWatcher("f", WATCH, 0, _start([]), stream)
    pattern = [0.5, 1.5, 1.0, 1.0]  # device ms a call, repeating: a mean of 1.0 ms

    _run(device, stream, 400, 0.2, lambda call: pattern[call % len(pattern)])
    assert stream.recorded == 400 // STRIDE
    assert device.baseline_ns == pytest.approx(1.0 * MS, rel=0.02)


def test_a_step_time_spans_stride_calls_and_is_their_mean():
    stream = Stream()
    pace = EventPace(stream, stride=4)
    pace.record(4)
    for device_ms in (1.0, 2.0, 3.0, 2.0):
        stream.launch(0.1, device_ms)
    pace.record(8)
    stream.sync()
    assert pace.finished() == 2 * MS  # 8 ms over 4 calls
