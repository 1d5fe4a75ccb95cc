"""On CUDA, a watched call's step time read on the device, never with a sync.

A CUDA event is recorded on the current stream at the start of every :data:`STRIDE`-th
watched call; once the device has passed the next one (``Event.query``), the time between the
two on the device's clock over the calls between them is each of those calls' step time (an
event, its query and its reading cost about 12.7 us on an H100 as measured with
``Event.record()``: paid once in STRIDE calls).

Where the device paces the job, the host runs ahead of it until the launch queue fills or a
sync (``loss.item()`` every 50 calls) waits for every call queued before it, so the host's
time per call is the host's own cost on most calls and the device's backlog on one: a
median of host times then misses a device-bound slowdown entirely. The device's time
between the calls' starts is the job's pace either way (where the host is the slower, the
device waits for each call's first launch and its clock reads the host's pace).

An event is reused once the device has passed it; a call that finds every event in flight
(the device more than :data:`POOL` events behind) or a stream being captured into a CUDA graph
records none, and no step time spans that gap. Measured cost per call:
``benchmarks/gpu/watch_cost_cuda.py`` (docs/watch.md, "On a GPU").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from autoprof.record.watch.config import Watch
from autoprof.record.watch.watcher import Trigger, Watcher
from autoprof.runfolder.watchfile import DEVICE_CLOCK

POOL = 256  # events in flight at most (the device may be POOL x STRIDE calls behind)
STRIDE = 4  # an event every STRIDE-th call; each of those calls' step time is their mean
_READS_PER_CALL = 2  # finished step times read per call at most (a backlog drains)
_STREAMS_CACHED = 64  # current streams remembered by their raw handle at most


class StreamCalls:
    """The two calls a watched call makes on the device, at their cheapest: is the current
    stream being captured, and record an event on it. ``Event.record()`` asks torch for
    the current stream as a new Python ``Stream`` each time (a few microseconds); here the
    ``Stream`` is kept per (device, raw stream handle), both read from torch's C calls, and
    made again only where the current stream changed. Where those calls are missing (a
    stand-in, another torch) the public ones are used."""

    __slots__ = ("capturing", "_device", "_raw", "_record", "_current", "_streams")

    def __init__(self, cuda: Any, c_api: Any = None) -> None:
        names = ("_cuda_isCurrentStreamCapturing", "_cuda_getDevice",
                 "_cuda_getCurrentRawStream", "_CudaEventBase")
        self._streams: dict[tuple[int, int], Any] = {}
        if c_api is None or not all(hasattr(c_api, n) for n in names):
            self.capturing: Callable[[], bool] = cuda.is_current_stream_capturing
            self._record: Callable[..., None] | None = None
            return
        self.capturing = c_api._cuda_isCurrentStreamCapturing
        self._device: Callable[[], int] = c_api._cuda_getDevice
        self._raw: Callable[[int], int] = c_api._cuda_getCurrentRawStream
        self._record = c_api._CudaEventBase.record
        self._current: Callable[[], Any] = cuda.current_stream

    def record(self, event: Any) -> None:
        """Record ``event`` on the current stream."""
        if self._record is None:
            event.record()
            return
        device = self._device()
        key = (device, self._raw(device))
        stream = self._streams.get(key)
        if stream is None:
            if len(self._streams) >= _STREAMS_CACHED:
                self._streams.clear()
            stream = self._streams[key] = self._current()
        self._record(event, stream)


class EventPace:
    """The calls' start events in flight, oldest first, and the free ones; an event is
    recorded every ``stride``-th call (the caller's choice), and a step time is the mean of
    the ``stride`` calls between two of them."""

    __slots__ = ("_calls", "_cuda", "_free", "_pending", "stride")

    def __init__(self, cuda: Any, c_api: Any = None, stride: int = 1) -> None:
        self._cuda = cuda  # torch.cuda (a stand-in in the unit tests)
        self._calls = StreamCalls(cuda, c_api)  # torch._C, where the fast calls are wanted
        self.stride = stride
        self._free: list[Any] = []
        self._pending: deque[tuple[int, Any]] = deque()

    def record(self, call: int) -> None:
        """An event at call ``call``'s start on the current stream, unless a stream is being
        captured or every event is in flight (no step time spans the skipped call)."""
        calls = self._calls
        if calls.capturing():
            return
        if self._free:
            event = self._free.pop()
        elif len(self._pending) < POOL:
            event = self._cuda.Event(enable_timing=True)
        else:
            return
        calls.record(event)
        self._pending.append((call, event))

    def finished(self) -> int | None:
        """The oldest step time the device has finished (ns, the mean of the ``stride``
        calls), or None: the oldest event in flight is paired with the next one once the
        device has passed that one."""
        pending = self._pending
        while len(pending) >= 2:
            (call, start), (after, end) = pending[0], pending[1]
            if not end.query():
                return None
            pending.popleft()
            self._free.append(start)
            if after == call + self.stride:
                elapsed_ms: float = start.elapsed_time(end)
                return round(elapsed_ms * 1e6 / self.stride)
        return None

    def restart(self) -> None:
        """Forget the events in flight (a window begins or ended): none is paired across."""
        self._free.extend(event for _, event in self._pending)
        self._pending.clear()


class DeviceWatcher(Watcher):
    """A :class:`Watcher` whose step times are the device's (:class:`EventPace`): the call
    count, the manual, signal and call triggers are the host's, as they happen; a drift is
    seen when the device has passed the calls that make it (a few calls later)."""

    __slots__ = ("_pace",)
    clock = DEVICE_CLOCK

    def __init__(self, name: str, watch: Watch, calls_before: int,
                 start_window: Callable[[Trigger], bool], cuda: Any,
                 c_api: Any = None) -> None:
        self._pace = EventPace(cuda, c_api, STRIDE)
        super().__init__(name, watch, calls_before, start_window)

    def tick(self, now_ns: int) -> bool:
        calls = self.calls = self.calls + 1
        if self.pending is not None or calls >= self._next_at:
            self._pace.restart()
            return self._manual_or_call()
        if calls % STRIDE:
            return False
        pace = self._pace
        pace.record(calls)
        for _ in range(_READS_PER_CALL):
            period_ns = pace.finished()
            if period_ns is None:
                return False
            for _ in range(STRIDE):  # each call the mean spans, as the host clock counts
                if self._observe(period_ns):
                    pace.restart()
                    return True
        return False

    def _restart_clock(self) -> None:
        self._pace.restart()
