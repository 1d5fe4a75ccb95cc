"""The source-lines step: one unmeasured step recorded by a second, short torch.profiler
with Python stacks and module names, so that the analysis can name the user's line and
``nn.Module`` path of every op without slowing the measured steps.

``with_stack=True`` slows every op (a Python frame event per call), so autoprof never turns
it on in the steps whose times it reports. Instead the schedule gets one extra step just
before torch's profiler first records (after its ``wait`` steps, before its ``warmup``):
the main profiler idles (``NONE``) in it and this one records it with ``with_stack=True``
and ``with_modules=True``. Its trace is written into the run folder as
``lines.<worker>.json.gz`` (not a ``*.pt.trace.json*`` name: the loader never takes it for
a measured cycle); the analysis (``autoprof.analysis.metrics.lines``) matches its ops to the
measured steps' by order and name. ``source_lines=False`` leaves the step out.

torch's Python tracer names each frame by the line it entered at (a function's first line),
not the line running when an op is called, so while the step records a
``TorchFunctionMode`` labels each torch call made from the user's code with the innermost
user frame's current line (``record_function("autoprof::line /abs/train.py:42 (step)")``;
user code: not torch, autoprof, site-packages or the standard library). Ops called from no
Python line (autograd's backward on its own thread) keep the stack's innermost user function.
While it records, global forward hooks label each module call with its attribute path
(``record_function("autoprof::module GPT2Model.h.3.attn")``): torch's own module events
name classes (``nn.Module: Linear_1``), not the path a user reads in ``named_modules()``.

A torch.compile'd module or function runs in the step as in the measured steps: each of
its calls takes the mode and the hooks away (dynamo guards on both: with them it would
compile again and break its graph at each label) and is labelled as a whole with the line
that called it, so its ops are the measured steps' ops and take that line.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import sys
import sysconfig
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autoprof import runfolder
from autoprof.record.lines_graphs import KERNELS_KEY, ReplayLabels, inductor_kernels
from autoprof.record.lines_hooks import (
    CompiledRegions,
    ModulePaths,
    optimize_contexts,
)
from autoprof.record.lines_hooks import quietly as _quietly

LINE_LABEL = "autoprof::line "
# installed packages, and the Python files inductor writes for compiled graphs
_NOT_USER_PARTS = ("site-packages", "dist-packages", "/torchinductor_")


def not_user_prefixes(torch: Any) -> tuple[str, ...]:
    """Folders whose frames are never the user's: torch, autoprof, installed packages and
    the standard library."""
    import autoprof

    paths = sysconfig.get_paths()
    folders = {os.path.dirname(torch.__file__), os.path.dirname(autoprof.__file__),
               paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}
    return tuple(sorted(os.path.join(f, "") for f in folders if f))


def is_user_file(filename: str, prefixes: tuple[str, ...]) -> bool:
    """Is ``filename`` (a code object's) the user's own code?"""
    if filename.startswith("<") or any(part in filename for part in _NOT_USER_PARTS):
        return False
    return not filename.startswith(prefixes)


def _line_finder(prefixes: tuple[str, ...]) -> Callable[[], str | None]:
    """``where()``: ``path:line (function)`` of the innermost user frame of its caller's
    caller (the code that called the torch function), or None."""
    user: dict[str, bool] = {}

    def where() -> str | None:
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            mine = user.get(name)
            if mine is None:
                mine = user[name] = is_user_file(os.path.abspath(name), prefixes)
            if mine:
                return f"{os.path.abspath(name)}:{frame.f_lineno} ({frame.f_code.co_name})"
            frame = frame.f_back  # type: ignore[assignment]
        return None

    return where


def _labeller(record: Any) -> Callable[[str | None], Any]:
    """``label(line)``: the entered ``autoprof::line`` label of ``line``, or None (no line,
    or torch refused it)."""

    def label(line: str | None) -> Any:
        if line is None:
            return None
        try:
            rf = record(LINE_LABEL + line)
            rf.__enter__()
        except Exception:
            return None
        return rf

    return label


class _LineLabels:
    """A TorchFunctionMode (built on first use: torch imported lazily) whose handler labels
    each torch call with the innermost user frame's current line."""

    @staticmethod
    def build(torch: Any, where: Callable[[], str | None],
              label: Callable[[str | None], Any]) -> Any:
        class Mode(torch.overrides.TorchFunctionMode):  # type: ignore[misc]
            def __torch_function__(self, func: Any, types: Any, args: Any = (),
                                   kwargs: Any = None) -> Any:
                try:  # a failure of the label never reaches the user's call
                    rf = label(where())
                except Exception:
                    rf = None
                if rf is None:
                    return func(*args, **(kwargs or {}))
                try:
                    return func(*args, **(kwargs or {}))
                finally:
                    _quietly(rf.__exit__, None, None, None)

        return Mode()


def lines_file(run_dir: Path, worker: str) -> Path:
    """Where the source-lines trace of ``worker`` goes in the run folder."""
    return run_dir / runfolder.lines_name(worker)


class LinesStep:
    """One step recorded with stacks and modules; its trace written into the run folder."""

    def __init__(self, activities: list[Any], record_shapes: bool) -> None:
        import torch
        from torch.profiler import profile

        self._torch = torch
        self._prof: Any = profile(activities=activities, record_shapes=record_shapes,
                                  with_stack=True, with_modules=True)
        self._hooks: ModulePaths | None = None
        self._mode: Any = None
        self._replays: ReplayLabels | None = None
        self._regions: CompiledRegions | None = None
        self._prefixes = not_user_prefixes(torch)

    def profiler_module(self) -> Any:
        """``torch.autograd`` (where the process-wide profiler is asked about)."""
        return self._torch.autograd

    def start(self) -> None:
        # torch.compile'd modules warn once that global hooks fire an extra time for them:
        # ours are only on during this step
        warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there "
                                "are global hooks")
        contexts = optimize_contexts()  # before the profiler: its scan is no step's work
        self._prof.start()
        try:
            self._hooks = ModulePaths(self._torch)
            where = _line_finder(self._prefixes)
            label = _labeller(self._torch.autograd.profiler.record_function)
            regions = CompiledRegions(self._torch, where, label, self._hooks, contexts)
            self._regions = regions
            self._replays = ReplayLabels(self._torch, regions.outside(where), label)
            mode = _LineLabels.build(self._torch, regions.outside(where), label)
            mode.__enter__()
            self._mode = regions.mode = mode
        except Exception:
            _quietly(self.stop, None, None)  # what did start is off again: no lines, no leak
            raise

    def stop(self, run_dir: Path | None, worker: str | None) -> Path | None:
        """Stop recording and write the trace (nothing without a run folder)."""
        mode, self._mode = self._mode, None
        hooks, self._hooks = self._hooks, None
        replays, self._replays = self._replays, None
        regions, self._regions = self._regions, None
        try:
            if mode is not None:
                mode.__exit__(None, None, None)
        finally:
            if regions is not None:
                _quietly(regions.remove)
            if hooks is not None:
                hooks.remove()
            if replays is not None:
                _quietly(replays.remove)
            self._prof.stop()
        if run_dir is None:
            return None
        try:  # inductor's provenance is extra: without it the lines are still written
            kernels = inductor_kernels(lambda f: is_user_file(os.path.abspath(f),
                                                              self._prefixes))
        except Exception:
            kernels = {}
        return self._write(run_dir, worker, kernels)

    def _write(self, run_dir: Path, worker: str | None,
               kernels: dict[str, dict[str, list[str]]]) -> Path:
        """The trace, gzipped, with the compiled graphs' kernel lines when there are any."""
        name = worker or f"{socket.gethostname()}_{os.getpid()}"
        final = lines_file(run_dir, name)
        # torch writes by path (and its own .tmp): into a private folder, never a guessable
        # name; the gzipped copy goes through runfolder.atomic_open; a failure leaves nothing
        with runfolder.private_temp_dir(final) as folder:
            plain = folder / "plain.json"
            self._prof.export_chrome_trace(str(plain))
            with runfolder.atomic_open(final, fsync=False) as out, gzip.GzipFile(
                filename="", mode="wb", fileobj=out, compresslevel=1
            ) as dst:
                if kernels:
                    data = json.loads(plain.read_text(encoding="utf-8"))
                    data[KERNELS_KEY] = kernels
                    dst.write(json.dumps(data).encode("utf-8"))
                else:
                    with plain.open("rb") as src:
                        shutil.copyfileobj(src, dst)
        return final


class LinesControl:
    """When the source-lines step records: the driver calls :meth:`started` after torch's
    profiler starts, :meth:`stepping` before and :meth:`stepped` after each of its steps up
    to the first recorded one, and :meth:`stopping` before it stops. Every failure is noted
    and the run goes on."""

    def __init__(self, step: int | None, activities: tuple[str, ...], record_shapes: bool,
                 session: Any) -> None:
        self.step = step  # the step index it records, None: no lines step
        self._activities = activities
        self._record_shapes = record_shapes
        self._session = session  # what the run folder and the worker name are read from
        self._lines: LinesStep | None = None

    def wrap(self, schedule: Callable[[int], Any]) -> Callable[[int], Any]:
        """torch's schedule, idle (``NONE``) in the lines step."""
        if self.step is None:
            return schedule
        from torch.profiler import ProfilerAction

        def lines_schedule(step: int) -> Any:
            return ProfilerAction.NONE if step == self.step else schedule(step)

        return lines_schedule

    def started(self) -> None:
        if self.step == 0:
            self._start()

    def stepping(self, steps_done: int) -> None:
        """Step ``steps_done - 1`` ended: the lines step stops before torch's profiler may
        start its trace (only steps up to the first recorded one are passed)."""
        if self._lines is not None:
            self._stop()

    def stepped(self, steps_done: int) -> None:
        if steps_done == self.step:
            self._start()

    def stopping(self) -> None:
        if self._lines is not None:
            self._stop()

    def _start(self) -> None:
        from torch.profiler import ProfilerActivity

        from autoprof.record.warn import note

        kinds = {"cpu": ProfilerActivity.CPU, "cuda": ProfilerActivity.CUDA}
        try:
            self._lines = LinesStep([kinds[a] for a in self._activities], self._record_shapes)
            self._lines.start()
        except Exception as exc:
            self._lines = None
            note(f"autoprof: the source-lines step did not start ({exc!r}); no lines")

    def _stop(self) -> None:
        from autoprof.record.warn import note

        lines, self._lines = self._lines, None
        run = getattr(self._session, "_run", None)
        worker = getattr(getattr(run, "dist", None), "worker", None)
        try:
            if lines is not None:
                lines.stop(getattr(self._session, "run_dir", None), worker)
        except Exception as exc:
            note(f"autoprof: the source-lines trace was not written ({exc!r}); no lines")
            # torch's profiler starts its trace next: a lines profiler left on would stop it
            autograd = lines.profiler_module() if lines is not None else None
            if autograd is not None and autograd._profiler_enabled():
                _quietly(autograd._disable_profiler)
        if lines is not None:  # freed now, not by a full collection in a later (measured) step
            from autoprof.record.session.driver import release

            release(lines._prof)
