"""The finisher waits for an idle core: its work never runs while the program needs them all.

``SCHED_IDLE`` gives the finisher only CPU time nothing else wants, but a program whose
threads keep every core busy still pays when the finisher runs: each time one of its threads
sleeps for a moment (an intra-op worker between parallel regions), the finisher takes that
core, and the thread's wake-up waits for it to be preempted. On 2 cores with 2 intra-op
threads that made the program's worst 100 ms after the window 11-151x slower than before it
(`benchmarks/finisher_yield.py`). So the finisher, once it has the run's manifest and before
it takes the folder's lock (a reader never waits on it), waits (calling its `CpuGate`) until
one of:

- the program (the finisher's parent, given by pid) has ended;
- over each of the last CONFIRM looks of SAMPLE_S, the program used under PROGRAM_IDLE_CORES
  (it waits itself: for the finisher at exit, for input, for the GPU) or the machine had
  IDLE_CORES or more idle (a core the program does not use); one look is not enough, since
  the program's own export at the window's end leaves a core idle for a moment;
- it has waited ``max_wait_s`` in all (``AUTOPROF_FINISH_YIELD_S``, 30 s by default: a program
  that keeps every core busy for longer gets its run finished at ``SCHED_IDLE`` anyway, so
  the run is readable while the program goes on).

The finisher starts at nice 19 and makes itself ``SCHED_IDLE`` only once both waits are over
(``work_at_idle_priority``). It waits so twice: as it starts (``python -m autoprof.finish
--watch``, before it loads its own code, about 50 ms of CPU, while ``Drain`` keeps its stdin
read so the program's hand-over never blocks), and once it has the run's manifest. This
module and the finisher's entry point import only the standard library before the first
wait. Both measures come from ``/proc`` (Linux): the program's CPU time from
``/proc/<pid>/stat``, the machine's idle time from ``/proc/stat``. Where ``/proc`` cannot be
read the gate never waits. Never imports torch.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from typing import NamedTuple

SAMPLE_S = 0.1  # each look at the machine: how long the finisher sleeps and measures
CONFIRM = 2  # this many looks in a row must leave room (the window's own end is a lull)
PROGRAM_IDLE_CORES = 0.25  # the program uses no more than this: it waits itself
IDLE_CORES = 0.75  # the machine has this much idle: a core the program leaves free


class Sample(NamedTuple):
    """One reading: the program's CPU seconds (None: it has ended) and the machine's idle
    and total CPU seconds, summed over its cores."""

    program_s: float | None
    idle_s: float
    total_s: float


def _ticks() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100.0


def read_sample(pid: int) -> Sample | None:
    """The program's and the machine's CPU time now; None where /proc cannot be read."""
    tick = _ticks()
    try:
        with open("/proc/stat", "rb") as fh:
            fields = fh.readline().split()[1:]
        jiffies = [int(v) for v in fields]
    except (OSError, ValueError):
        return None
    idle = jiffies[3] + (jiffies[4] if len(jiffies) > 4 else 0)  # idle + iowait
    total = sum(jiffies[:8])  # guest time is already counted in user
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().rsplit(b")", 1)[1].split()
        program: float | None = None if stat[0] == b"Z" else \
            (int(stat[11]) + int(stat[12])) / tick  # utime + stime
    except (OSError, ValueError, IndexError):
        program = None  # gone
    return Sample(program, idle / tick, total / tick)


def may_run(before: Sample, after: Sample, cpus: int) -> bool:
    """Whether, over the time between the two samples, the program waited itself or left a
    core idle (the module doc)."""
    if before.program_s is None or after.program_s is None:
        return True
    spent = after.total_s - before.total_s
    if spent <= 0:
        return True  # no time passed the kernel could count: nothing to tell
    wall_s = spent / cpus
    program_cores = (after.program_s - before.program_s) / wall_s
    idle_cores = cpus * (after.idle_s - before.idle_s) / spent
    return program_cores <= PROGRAM_IDLE_CORES or idle_cores >= IDLE_CORES


class CpuGate:
    """Waits for room for the finisher's work (the module doc). ``max_wait_s`` 0: never
    waits."""

    def __init__(self, program_pid: int, max_wait_s: float, *,
                 sample: Callable[[int], Sample | None] = read_sample,
                 sleep: Callable[[float], None] = time.sleep,
                 cpus: int | None = None) -> None:
        self.program_pid = program_pid
        self.left_s = max_wait_s
        self._sample = sample
        self._sleep = sleep
        self._cpus = cpus or os.cpu_count() or 1

    def __call__(self, between: Callable[[], bool] | None = None) -> None:
        """Return once the program leaves room for the finisher, or the wait is spent;
        ``between`` runs after each look and ends the wait when it returns True."""
        room = 0
        before = self._sample(self.program_pid)
        while self.left_s > 1e-9 and before is not None:  # (float steps of SAMPLE_S)
            self._sleep(SAMPLE_S)
            if between is not None and between():
                return
            after = self._sample(self.program_pid)
            self.left_s -= SAMPLE_S
            if after is None or after.program_s is None:
                return  # /proc unreadable now, or the program has ended
            room = room + 1 if may_run(before, after, self._cpus) else 0
            if room >= CONFIRM:
                return
            before = after


class Drain:
    """Reads what has arrived on a pipe (the finisher's stdin) without blocking, so the
    recording process never waits on a finisher that is still waiting for room; True once
    the pipe is at EOF (the program has ended)."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self.data = b""
        self.eof = False

    def __call__(self) -> bool:
        try:
            while not self.eof and select.select([self.fd], [], [], 0)[0]:
                chunk = os.read(self.fd, 1 << 16)
                self.eof = not chunk
                self.data += chunk
        except (OSError, ValueError):
            self.eof = True  # no pipe to read: nothing to wait for either
        return self.eof


def work_at_idle_priority() -> str:
    """The finisher, about to work: ``SCHED_IDLE`` for this process where the OS has it (its
    threads started later inherit it); it was started at nice 19. What was set ("": only
    the nice 19 it started with)."""
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is None or not hasattr(os, "sched_setscheduler"):
        return ""
    try:
        os.sched_setscheduler(0, idle, os.sched_param(0))
    except OSError:
        return ""
    return "SCHED_IDLE"
