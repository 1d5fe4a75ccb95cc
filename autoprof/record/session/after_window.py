"""The calls after a window, timed without a profiler (the table's ``AFTER`` state): the
first ``AFTER_WINDOW_CALLS`` one by one, then, where the process uses CUDA, a block of calls
timed back to back; their times follow the run to its finisher (``_send_after_window``).
"""

from __future__ import annotations

import time
import weakref

from autoprof.record.session import writer
from autoprof.record.session.actions import Actions
from autoprof.record.session.driver import cuda_in_use, profiler_enabled, sync_if_cuda_in_use
from autoprof.record.session.table import Event, State
from autoprof.record.session.writer import RunState

AFTER = 5  # the token kind of a call after the window (core.py numbers the others)
AFTER_WINDOW_CALLS = 5  # calls timed after the window ends, then handed to the finisher
# then, where the process uses CUDA, calls timed as one block: the untraced iteration (the
# caller's loop included, the GPU left to run behind the host), over at least PACE_CALLS
# calls and PACE_S seconds (the first calls after a sync run slower: the block outlasts
# them), at most PACE_MAX_CALLS
PACE_CALLS, PACE_S, PACE_MAX_CALLS = 20, 0.1, 5000


def _block_done(calls: int, elapsed_ns: int) -> bool:
    """Is the block of calls after the window long enough to be read (module constants)?"""
    return calls >= PACE_MAX_CALLS or (calls >= PACE_CALLS and elapsed_ns / 1e9 >= PACE_S)


class AfterWindow(Actions):
    """The actions and the two halves of a call after the window (mixed into the session)."""

    # the calls after the window are timed (a region's entries are not: once its session is
    # done a finished region costs one dict lookup, and ``region()`` never asks it again)
    times_after_window = True

    def _time_after_window(self) -> None:
        """The window ended: time the next calls, or (a region) end here. Should the session
        be dropped (its function gone) or the interpreter exit first, its finisher's pipe
        closes then, so the finisher never waits on a call that cannot come."""
        if not self.times_after_window:
            self._fire(Event.AFTER_TIMED)
        elif self._finisher is not None:
            weakref.finalize(self, self._finisher.close)

    def _begin_after(self, now_ns: int) -> tuple[int, int | None]:
        """A call after the window (no profiler records: ``Session._begin`` asked). The
        first AFTER_WINDOW_CALLS are timed as a warm-up call is: host clock, the device
        synchronized at both ends where this process uses CUDA; there is no trace left to
        disturb. Where it uses CUDA, the next calls are then timed as one block
        (``_begin_pace``); the payload is None for those. ``now_ns``: the clock as the
        decorator got control."""
        run = self._run
        if run is not None and run.pace is not None:
            return self._begin_pace(run, run.pace, now_ns)
        sync_if_cuda_in_use()
        return (AFTER, time.perf_counter_ns())

    def _begin_pace(self, run: RunState, block: writer.PaceBlock, now_ns: int
                    ) -> tuple[int, None]:
        """A call of the block: the first starts its clock; the first to start once the
        block is long enough (``_block_done``) synchronizes the device, reads the clock and
        ends the timing (that call itself is the program's own, untimed): the time per
        call, from the first one's start to the device done with the last one's work."""
        with self._lock:
            if self.state is not State.AFTER:
                return (AFTER, None)
            if block.started_ns is None:
                block.started_ns = now_ns
            if not _block_done(block.ended, now_ns - block.started_ns):
                block.overlapped |= block.running > 0
                block.running += 1
                return (AFTER, None)
            sync_if_cuda_in_use()
            elapsed_ns = time.perf_counter_ns() - block.started_ns
            if not block.overlapped and block.running == 0 and block.ended:
                run.after_window_iter_ms = elapsed_ns / 1e6 / block.ended
            self._fire(Event.AFTER_TIMED)
        return (AFTER, None)

    def _end_after(self, started_ns: int | None) -> None:
        if started_ns is None:  # a call of the block: counted, not timed
            with self._lock:
                run = self._run
                if self.state is State.AFTER and run is not None and run.pace is not None:
                    run.pace.running -= 1
                    run.pace.ended += 1
            return
        if not profiler_enabled():  # one started inside the call: its trace is not ours
            sync_if_cuda_in_use()
        elapsed_ms = (time.perf_counter_ns() - started_ns) / 1e6
        with self._lock:
            run = self._run
            if self.state is not State.AFTER or run is None:
                return  # flushed meanwhile
            run.after_window_call_ms.append(elapsed_ms)
            if len(run.after_window_call_ms) < AFTER_WINDOW_CALLS:
                return
            if cuda_in_use():
                run.pace = writer.PaceBlock()  # the next calls: the block
            else:
                self._fire(Event.AFTER_TIMED)

    def _send_after_window(self) -> None:
        """The calls timed after the window go to the finisher, which adds them to the
        finished manifest (``after_window_call_ms``, and the block's ``after_window_iter_ms``
        where it was timed); the pipe closes, and the finisher ends once its work is
        done."""
        finisher, run = self._finisher, self._run
        if finisher is not None:
            if run is None:
                finisher.close()
            else:
                finisher.close(run.after_window_call_ms, run.after_window_iter_ms)
