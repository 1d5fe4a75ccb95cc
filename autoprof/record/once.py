"""One full profile of a function, right now: the warm-up calls plus one schedule, then
every artifact waited for and the run loaded.

``autoprof.check`` is this plus the what-if fixes (:mod:`autoprof.record.check`); the
what-if runner profiles each fixed function through this module, never through ``check``,
so the arrows point one way: check -> whatif -> once -> decorator -> session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from autoprof.record.decorator import decorate
from autoprof.record.options import Options, make_options
from autoprof.record.session import Session, flush_session
from autoprof.record.warn import warn


def options_of(fn: Callable[..., Any]) -> tuple[Options, Callable[..., Any]]:
    """The options and the undecorated function of ``fn`` (``@autoprof``-decorated or not)."""
    session: Session | None = getattr(fn, "autoprof_session", None)
    if session is None:
        return make_options(), fn
    return session.options, fn.__wrapped__  # type: ignore[attr-defined]


def one_schedule(options: Options) -> Options:
    """The options of one full profile: ``repeat=0`` (until stopped) counts as one cycle."""
    if options.schedule.repeat == 0:
        return replace(options, schedule=replace(options.schedule, repeat=1))
    return options


def record(target: Callable[..., Any], options: Options, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> tuple[bool, Path | None]:
    """Call ``target`` through a fresh session as often as its warm-up plus one schedule
    need, then wait for its files: (autoprof on, the run folder or None)."""
    wrapped = decorate(target, options)
    fresh: Session | None = getattr(wrapped, "autoprof_session", None)
    total = options.warmup_calls + (options.schedule.total_steps or 0)
    try:
        for _ in range(total):
            wrapped(*args, **kwargs)
    finally:
        if fresh is not None:
            flush_session(fresh)  # the run's files are complete before this returns
    if fresh is not None and fresh.run_dir is None and fresh.blocked_by is not None:
        warn(f"autoprof: {fresh.name!r} recorded no run: another run was recording, "
             f"{fresh.blocked_by} (one torch profiler per process), and its schedule has "
             "not ended; call autoprof.flush() on that thread, or let its schedule end, "
             "before profiling another function")
    return fresh is not None, None if fresh is None else fresh.run_dir


def try_load(run_dir: Path) -> tuple[Any, str | None]:
    """(the loaded run, or its ``Path`` where the analysis layer cannot be imported, None),
    or (None, why it cannot be loaded: a full disk, a failed run with no trace)."""
    try:
        from autoprof.analysis import load  # absent on a torch-only machine
    except Exception:
        return run_dir, None
    try:
        return load(run_dir), None
    except Exception as exc:
        return None, str(exc)


def load_run(run_dir: Path) -> Any:
    """The loaded run (``autoprof.load``), or its ``Path`` where the analysis layer cannot
    be imported or cannot load it (warned)."""
    run, why = try_load(run_dir)
    if why is not None:
        warn(f"autoprof: the run in {run_dir} holds no usable profile: {why}")
        return run_dir
    return run


def profile_once(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``autoprof.check`` without fixes: the loaded run, its ``Path``, or None (autoprof
    off, or no run folder written)."""
    options, target = options_of(fn)
    _, run_dir = record(target, one_schedule(options), args, kwargs)
    return None if run_dir is None else load_run(run_dir)
