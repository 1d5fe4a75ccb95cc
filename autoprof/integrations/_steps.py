"""The profiled steps of a training loop driven by someone else's hooks.

A trainer calls back at the start and the end of each step, not around a function of ours, so a
step is one entry of ``autoprof.region(name, **options)`` entered in one hook and left in
another: the same session, schedule, warm-up and run folder as ``@autoprof``. Inside a
recorded step the phases (``forward``, ``backward``, ``optimizer``) are plain
``record_function`` labels, one open at a time, so they nest inside the step like the regions
of ``examples/train_regions.py``; they are only opened while the schedule can record (not in
the untraced warm-up steps, not after the schedule), so a finished run costs the loop nothing.

Only autoprof's public API is used (``autoprof.region``, ``autoprof.flush``,
``autoprof.Schedule``); the run folder is found on disk, by its manifest's pid.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import autoprof
from autoprof import env, runfolder
from autoprof.record.warn import warn
from autoprof.runfolder import kineto_label

PhaseName = Literal["forward", "backward", "optimizer"]
C = TypeVar("C", bound=type)

_names_lock = threading.Lock()
_names_taken: set[str] = set()


def unique_name(name: str) -> str:
    """``name``, or ``name-2``, ``name-3``... when a callback of this process already took it:
    a region's session is kept by name for the whole process, so a second trainer under the
    same name would only add labels and write no run."""
    with _names_lock:
        candidate, n = name, 1
        while candidate in _names_taken:
            n += 1
            candidate = f"{name}-{n}"
        _names_taken.add(candidate)
        return candidate


class StepRecorder:
    """One training loop's steps as entries of one region; phases as labels inside them."""

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        opts = dict(options)
        autoprof.autoprof(name=name, **opts)  # a misspelled option fails here, not mid-training
        self.name = unique_name(name)
        self.options = opts
        self.enabled = bool(opts.get("enabled", True)) and env.enabled()
        self.warmup_calls = int(opts.get("warmup_calls", opts.get("warmup", 3)))
        schedule = autoprof.Schedule.coerce(opts.get("schedule"))
        total = schedule.total_steps
        self.last_step: int | None = None if total is None else self.warmup_calls + total
        # watched (watch=...): every step stays a region entry after the first window, timed
        # by the region's watcher, and a triggered window records its steps' phases too
        self.watching = opts.get("watch") not in (None, False)
        self.steps_begun = 0
        self._step: Any = None  # the entered region of the step in progress
        self._phase: Any = None  # the record_function of the phase in progress
        self._phase_name: PhaseName | None = None
        self._thread: int | None = None  # the hooks' thread (labels stay on it)
        self.started_pid = os.getpid()

    @property
    def in_step(self) -> bool:
        return self._step is not None

    def _recording(self) -> bool:
        """Can the profiler be on in the step in progress (past the warm-up, in the schedule,
        or in a triggered window of a watched region)?"""
        n = self.steps_begun
        if n > self.warmup_calls and (self.last_step is None or n <= self.last_step):
            return True
        watcher = getattr(self._step, "watcher", None)  # a watched region's (record.watch)
        return watcher is not None and watcher.window is not None

    def begin_step(self) -> None:
        """A step starts (a step left open by a missed end hook is ended first)."""
        if not self.enabled:
            return
        if self._step is not None:
            self.end_step()
        if (self.last_step is not None and self.steps_begun >= self.last_step
                and not self.watching):
            return  # the schedule is over: the region is a pass-through, skip even that
        region = autoprof.region(self.name, **self.options)
        region.__enter__()
        self._step = region
        self._thread = threading.get_ident()
        self.steps_begun += 1

    def phase(self, name: PhaseName | None) -> None:
        """End the phase in progress; start ``name`` (None: none) inside a recording step."""
        if self._phase is not None:
            open_rf, self._phase = self._phase, None
            open_rf.__exit__(None, None, None)
        self._phase_name = name
        if name is None or self._step is None or not self._recording():
            return
        if threading.get_ident() != self._thread:
            return  # a hook on another thread (a data worker): labels never cross threads
        import torch

        rf: Any = torch.autograd.profiler.record_function(kineto_label(name))
        rf.__enter__()
        self._phase = rf

    def end_phase(self, name: PhaseName) -> None:
        """End the phase ``name`` if it is the one in progress."""
        if self._phase is not None and self._phase_name == name:
            self.phase(None)

    def end_step(self, exc: BaseException | None = None) -> None:
        """The step ends; with ``exc`` the run ends ``failed`` with that error, as a decorated
        function raising it would."""
        self.phase(None)
        region, self._step = self._step, None
        if region is not None:
            region.__exit__(type(exc) if exc is not None else None, exc,
                            exc.__traceback__ if exc is not None else None)

    def finish(self, exc: BaseException | None = None) -> None:
        """Training is over: end the step in progress, then ``autoprof.flush()`` ends a run cut
        short (``partial``) and waits until every file of the run is written."""
        if not self.enabled:
            return
        self.end_step(exc)
        if self.steps_begun > self.warmup_calls:
            autoprof.flush()  # a triggered window still recording too

    def give_up(self, hook: str, problem: Exception) -> None:
        """A hook failed inside autoprof: one warning, the step in progress is let go, and
        the callback does nothing from then on; training goes on."""
        if self.enabled:
            warn(f"autoprof: the callback's {hook} failed ({type(problem).__name__}: "
                 f"{problem}); profiling of {self.name!r} stops, training goes on")
        self.enabled = False
        with contextlib.suppress(Exception):
            self.end_step()

    def run_dir(self) -> Path | None:
        """The run folder this process wrote for these steps (None before the warm-up ended)."""
        out_dir = self.options.get("out_dir")
        root = Path(out_dir) if out_dir is not None else env.out_dir()
        return find_run_dir(root / self.name, self.started_pid)


class ForwardLabels:
    """``forward`` around each outermost call of the given modules (their forward pre- and
    post-hooks bracket the call exactly, so the label nests inside any label the caller or a
    wrapper such as DDP opened); ``after``: the phase that starts when the call returns."""

    def __init__(self, recorder: StepRecorder, after: PhaseName | None = None) -> None:
        self.recorder = recorder
        self.after = after
        self.depth = 0
        self.handles: list[Any] = []

    def attach(self, modules: list[Any]) -> None:
        if self.handles or not self.recorder.enabled:
            return
        for module in modules:
            self.handles += [module.register_forward_pre_hook(self._begins),
                             module.register_forward_hook(self._ends)]

    def detach(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def _begins(self, module: Any, inputs: Any) -> None:
        self.depth += 1
        if self.depth == 1 and self.recorder.in_step:
            with guard(self.recorder, "forward pre-hook"):
                self.recorder.phase("forward")

    def _ends(self, module: Any, inputs: Any, output: Any) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and self.recorder.in_step:
            with guard(self.recorder, "forward hook"):
                self.recorder.end_phase("forward")
                if self.after is not None:
                    self.recorder.phase(self.after)


@contextlib.contextmanager
def guard(recorder: StepRecorder, hook: str) -> Any:
    """Around autoprof's work in a trainer's or a module's hook: an error of autoprof's
    never reaches training (``StepRecorder.give_up``)."""
    try:
        yield
    except Exception as problem:
        recorder.give_up(hook, problem)


def _guarded(hook: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(hook)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        with guard(self.recorder, hook.__name__):
            return hook(self, *args, **kwargs)
        return None

    return guarded


def guard_hooks(cls: C) -> C:
    """Every ``on_*`` hook of a callback class (and its optimizer post-hook ``_stepped``)
    never raises autoprof's own error into training: one warning, then the callback stops
    profiling and training goes on."""
    for attr, value in list(vars(cls).items()):
        if (attr.startswith("on_") or attr == "_stepped") and callable(value):
            setattr(cls, attr, _guarded(value))
    return cls


def _manifests(folder: Path) -> list[Path]:
    return [folder / runfolder.MANIFEST, *sorted(folder.glob(runfolder.RANK_MANIFEST_GLOB))]


def find_run_dir(name_dir: Path, pid: int) -> Path | None:
    """The newest run folder under ``name_dir`` whose manifest (or a rank's) names ``pid``."""
    try:
        folders = sorted((p for p in name_dir.iterdir() if p.is_dir()), reverse=True)
    except OSError:
        return None
    for folder in folders:  # run ids sort by time
        for manifest in _manifests(folder):
            try:
                record = runfolder.read_manifest(manifest, runfolder.MAX_MANIFEST_BYTES)
            except runfolder.ManifestError:
                continue
            if record.pid == pid:
                return folder
    return None


def missing_extra(package: str, extra: str) -> ImportError:
    """The error an integration raises when its trainer is not installed."""
    return ImportError(
        f"autoprof.integrations.{extra} needs the {package!r} package: "
        f"pip install 'autoprof[{extra}]' (python: {sys.executable})")
