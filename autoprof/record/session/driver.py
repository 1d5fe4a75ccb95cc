"""The torch.profiler driver: build, start, step and stop one profiler, and ask its
schedule what a step is.

The phase of a step is asked of the schedule function handed to torch
(``torch.profiler.schedule``), never recomputed. torch is imported on first use: ``import
autoprof`` never imports it.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from autoprof.record.lines import LinesControl
from autoprof.record.options import Options, Phase
from autoprof.record.session.cupti import CuptiTeardown
from autoprof.record.warn import note

# torch.profiler.ProfilerAction name -> the phase autoprof records in an error
PHASES: dict[str, Phase] = {
    "NONE": "wait",
    "WARMUP": "profiler_warmup",
    "RECORD": "active",
    "RECORD_AND_SAVE": "last_active",
}
SLOW_START_S = 0.5  # a profiler start at least this long is noted (logging)
_torch: Any = None


def torch_module() -> Any:
    """torch, imported on first use (``import autoprof`` never imports it)."""
    global _torch
    if _torch is None:
        import torch

        _torch = torch
    return _torch


def profiler_enabled() -> bool:
    """Is any torch profiler (ours or the user's) recording in this process?"""
    return bool(torch_module().autograd._profiler_enabled())


def cuda_in_use() -> bool:
    """Has this process started CUDA (without importing torch or starting CUDA to ask)?"""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.cuda.is_initialized())


def sync_if_cuda_in_use() -> None:
    """Wait for the device, where this process already uses CUDA (a timed call's end)."""
    if cuda_in_use():
        sys.modules["torch"].cuda.synchronize()


def idle_sync_ms(tries: int = 3) -> float | None:
    """What `sync_if_cuda_in_use` itself costs with nothing left to wait for (called right
    after a timed call's closing sync): the least of `tries`, in ms; None where this process
    does not use CUDA. A timed call includes one such sync after its GPU tail."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    best_ns = None
    for _ in range(tries):
        started_ns = time.perf_counter_ns()
        sync_if_cuda_in_use()
        took_ns = time.perf_counter_ns() - started_ns
        best_ns = took_ns if best_ns is None else min(best_ns, took_ns)
    return None if best_ns is None else best_ns / 1e6


def device_info(uses_cuda: bool) -> dict[str, Any] | None:
    """Name and properties of the current CUDA device, or None on CPU: the manifest's
    ``device``, asked of torch by the recording process only (the one home of the device
    name on the collect side; readers take it from the manifest)."""
    if not uses_cuda:
        return None
    torch = torch_module()
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    keep = ("name", "major", "minor", "total_memory", "multi_processor_count", "L2_cache_size")
    properties = {k: getattr(props, k) for k in keep if hasattr(props, k)}
    return {"name": torch.cuda.get_device_name(index), "index": index, "properties": properties}


def threads_info() -> dict[str, int]:
    """The manifest's ``intra_op_threads`` (torch's) and ``cpus`` (the CPUs this process may
    run on): together they tell intra-op threads that outnumber the cores."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return {"intra_op_threads": int(torch_module().get_num_threads()), "cpus": cpus}


def backend_flags() -> dict[str, bool]:
    """The manifest's ``cudnn_benchmark``: ``torch.backends.cudnn.benchmark`` as the program
    left it when the run was written (cuDNN then picks each convolution's algorithm by timing
    them, not by its heuristics)."""
    return {"cudnn_benchmark": bool(torch_module().backends.cudnn.benchmark)}


@contextlib.contextmanager
def _no_lazy_inductor() -> Iterator[None]:
    """While torch.profiler starts or steps: ``hasattr(torch, "_inductor")`` answers False
    unless the program imported ``torch._inductor`` itself.

    torch's ``_KinetoProfile.prepare_trace`` asks ``hasattr(torch, "_inductor")`` to read
    inductor's cudagraphs flag; torch's lazy module ``__getattr__`` then imports
    ``torch._inductor`` (with dynamo, sympy, torch.distributed: about 800 modules, 0.9 s on
    a quiet machine, 4.7 s on a loaded 2-core one) inside the user's call where the
    profiler's warm-up begins. A program that never imported inductor uses none of its
    cudagraphs, so the flag's default (False) is the right answer."""
    torch = torch_module()
    lazy = torch.__dict__.get("__getattr__")
    if lazy is None or "torch._inductor" in sys.modules:
        yield
        return

    def no_inductor(name: str) -> Any:
        if name == "_inductor":
            raise AttributeError(name)
        return lazy(name)

    torch.__getattr__ = no_inductor
    try:
        yield
    finally:
        if torch.__dict__.get("__getattr__") is no_inductor:
            torch.__getattr__ = lazy


def record_function() -> Any:
    """torch's ``record_function`` class: the label of one call in the trace."""
    return torch_module().autograd.profiler.record_function


def total_steps(options: Options) -> float:
    """The calls one schedule takes (infinite with ``repeat=0``)."""
    total = options.schedule.total_steps
    return math.inf if total is None else total


def trace_only(with_stack: bool) -> dict[str, Any]:
    """torch.profiler's ``experimental_config`` with ``trace_only`` where this torch has it
    (2.13 has it; nothing for a torch without it): autoprof only exports the trace, so torch's stop
    builds none of the per-event objects that ``events()`` and ``key_averages()`` read (a
    ``KinetoEvent`` per event and the event tree), which the stop would otherwise build and
    the window's end free. The trace keeps every field (torch writes them onto its
    activities either way). torch turns it off with stacks (``with_stack``: the stack of an
    event needs that tree), so it is not asked for then."""
    if with_stack:
        return {}
    try:
        from torch._C._profiler import _ExperimentalConfig

        return {"experimental_config": _ExperimentalConfig(trace_only=True)}
    except (ImportError, TypeError):  # a torch without the option
        return {}


def lines_step_fits(schedule_fn: Callable[[int], Any], first: int, total: float) -> bool:
    """Do torch's first two recording steps both warm up (the first becomes the lines step,
    the second stays torch's own warm-up)?"""
    return (first + 1 < total and schedule_fn(first).name == "WARMUP"
            and schedule_fn(first + 1).name == "WARMUP")


class Driver:
    """One torch.profiler for one run: its schedule, start, step and stop."""

    def __init__(self, options: Options, activities: tuple[str, ...],
                 on_trace_ready: Callable[[Any], None]) -> None:
        from torch.profiler import ProfilerActivity, profile, schedule

        s = options.schedule
        self.total_steps = total_steps(options)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*won't be using warmup.*")
            extra = {"skip_first_wait": s.skip_first_wait} if s.skip_first_wait else {}
            self.schedule_fn: Callable[[int], Any] = schedule(
                wait=s.wait, warmup=s.warmup, active=s.active, repeat=s.repeat,
                skip_first=s.skip_first, **extra,
            )
        first = 0  # the first step torch's schedule does anything in (later ones are recorded)
        while first < self.total_steps and self.schedule_fn(first).name == "NONE":
            first += 1
        self.first_recorded_step = first
        # the source-lines step: torch's first profiler warm-up step, taken by a second
        # profiler with stacks (autoprof.record.lines) while torch's idles in it; only when
        # torch keeps a warm-up step of its own after it (its trace's start, CUPTI's on a GPU,
        # is paid there, never in the first measured step)
        self.lines = LinesControl(first if options.source_lines and lines_step_fits(
            self.schedule_fn, first, self.total_steps) else None, activities,
                                  options.record_shapes, getattr(on_trace_ready, "__self__", None))
        self.schedule_fn = self._cuttable(self.lines.wrap(self.schedule_fn))
        # autoprof exports each cycle through on_trace_ready, so torch's "Profiler clears
        # events at the end of each cycle" notice (torch >= 2.5) is expected: silence that
        # one message, nothing else.
        warnings.filterwarnings(
            "ignore", message="Warning: Profiler clears events at the end of each cycle"
        )
        record = 0  # the first step torch records in (after its wait and warm-up steps)
        while record < self.total_steps and self.schedule_fn(record).name in ("NONE", "WARMUP"):
            record += 1
        self._first_record = record
        self._steps_taken = 0
        # the profiler's own time before its first recorded step, outside the user's
        # function (build, start, the steps that prepare and start the trace)
        self.start_ms = 0.0
        built_ns = time.perf_counter_ns()
        kinds = {"cpu": ProfilerActivity.CPU, "cuda": ProfilerActivity.CUDA}
        self._prof: Any = profile(
            activities=[kinds[a] for a in activities],
            schedule=self.schedule_fn,
            on_trace_ready=on_trace_ready,
            record_shapes=options.record_shapes,
            profile_memory=options.profile_memory,
            with_stack=options.with_stack,
            with_flops=options.with_flops,
            with_modules=options.with_modules,
            **trace_only(options.with_stack),
        )
        # CUPTI let go by the trace's last stop only (cupti.py)
        self._cupti = CuptiTeardown()
        self._activities = activities
        self.start_ms += (time.perf_counter_ns() - built_ns) / 1e6

    def _cuttable(self, schedule_fn: Callable[[int], Any]) -> Callable[[int], Any]:
        """torch's schedule, ending at the step :meth:`cut` set (the window fitted to a
        budget): that step saves the trace, later ones do nothing. The closure holds the cut,
        never the driver: torch's profiler holds the schedule, and a cycle through the driver
        would keep the profiler and its events until a garbage collection."""
        from torch.profiler import ProfilerAction

        # the phase of each of torch's actions, keyed by the action (its ``name`` is a
        # property of Python code, asked once per recorded step otherwise)
        self._phase_of: dict[Any, Phase] = {
            action: PHASES[action.name] for action in ProfilerAction if action.name in PHASES}
        self._cut_after: list[int] = []
        # the last (step, action) asked: torch asks for step k as step k - 1 ends, and
        # :meth:`phase` asks for it again as step k ends (a step's own cost while recording)
        self._asked: list[tuple[int, Any]] = [(-1, None)]

        def cuttable(step: int, cut_after: list[int] = self._cut_after,
                     asked: list[tuple[int, Any]] = self._asked) -> Any:
            cut = cut_after[0] if cut_after else None
            if cut is None or step < cut:
                action = schedule_fn(step)
            elif step > cut:
                action = ProfilerAction.NONE
            else:
                action = schedule_fn(step)
                if action == ProfilerAction.RECORD:
                    action = ProfilerAction.RECORD_AND_SAVE
            asked[0] = (step, action)  # one store: a reader sees a whole pair
            return action

        return cuttable

    def cut(self, last_step: int) -> None:
        """End the window after ``last_step`` (a recording step): the schedule saves the
        trace there and stops."""
        self._cut_after[:] = [last_step]
        self._asked[0] = (-1, None)  # asked before the cut
        self.total_steps = last_step + 1

    def recording_step(self, start: int, count: int) -> int | None:
        """The step where ``count`` recording steps from ``start`` (counted) end; None when
        the schedule ends first."""
        step, seen = start, 0
        limit = min(self.total_steps, start + 1_000_000)
        while step < limit:
            if self.phase(step) in ("active", "last_active"):
                seen += 1
                if seen >= count:
                    return step
            step += 1
        return None

    @property
    def first_record(self) -> int:
        """The first step torch records in (after its wait and warm-up steps)."""
        return self._first_record

    def phase(self, step: int) -> Phase:
        """What torch's schedule does in ``step`` (``done`` past the schedule)."""
        if step >= self.total_steps:
            return "done"
        if step == self.lines.step:
            return "lines"
        asked_step, action = self._asked[0]  # the schedule: a function of the step and cut
        if asked_step != step:
            action = self.schedule_fn(step)
        return self._phase_of.get(action, "wait")

    def start(self) -> None:
        """Start recording (``start_ms`` counts it)."""
        started_ns = time.perf_counter_ns()
        with _no_lazy_inductor():
            self._prof.start()
            self.lines.started()
        self.start_ms += (time.perf_counter_ns() - started_ns) / 1e6

    def step(self) -> None:
        """End a step; up to the first recorded one, its time counts in ``start_ms``."""
        self._steps_taken += 1
        if self._steps_taken > self._first_record:
            if self._steps_taken >= self.total_steps:  # this step stops the last cycle's trace
                self._let_cupti_go()
            self._prof.step()
            return
        started_ns = time.perf_counter_ns()
        with _no_lazy_inductor():
            self.lines.stepping(self._steps_taken)
            self._prof.step()
            self.lines.stepped(self._steps_taken)
        self.start_ms += (time.perf_counter_ns() - started_ns) / 1e6

    @property
    def started(self) -> bool:
        """Has the first recorded step begun (``start_ms`` is final)?"""
        return self._steps_taken >= self._first_record

    def stop(self) -> None:
        """Stop (torch syncs the device itself when the trace stops, exporting the cycle),
        then free torch's profiler and its results (:func:`release`)."""
        try:
            with _no_lazy_inductor():
                self.lines.stopping()
                self._let_cupti_go()
                self._prof.stop()
        finally:
            self._cupti.restore()
        release(self._prof)

    def _let_cupti_go(self) -> None:
        """Ask Kineto to tear CUPTI down as the trace now stopping ends (cupti.py)."""
        self._cupti.set(self._activities, getattr(torch_module().version, "cuda", None))


def release(prof: Any) -> None:
    """Free a stopped torch profiler and the results it holds now, in the call that ends the
    window. torch's profiler object holds its own bound methods (``action_map``): a reference
    cycle, so only a full garbage collection frees it, at whatever later call of the program
    that falls on, with the events it holds (seconds at tens of thousands of events).
    Emptying its attributes (and those of the profile they hold) breaks the cycle."""
    for obj in (getattr(prof, "profiler", None), prof):
        state = getattr(obj, "__dict__", None)
        if isinstance(state, dict):
            state.clear()


def note_slow_start(name: str, start_ms: float) -> None:
    """A profiler that took ``SLOW_START_S`` or more to start (CUPTI attaching, torch's
    imports) is noted once: the calls it sat in waited for it."""
    if start_ms >= SLOW_START_S * 1000:
        note(f"autoprof: torch.profiler took {start_ms / 1000:.1f} s to start for {name!r} "
             "(the calls before its first recorded step waited for it; later calls do not; "
             "the manifest keeps it as profiler_start_ms)")
