"""The run folder from the recording side: open it, write its ``recording`` manifest, hand
the run to its finisher, and read back what the finisher decided.

Every manifest goes through ``autoprof.runfolder`` (its builder, names and atomic writes);
the facts only the recording process knows are written here once: the device, the calls
recorded (``steps_recorded``) and the status it asks for (``requested_status``, after the
``repeat`` rule of :func:`requested_status`). The finisher (``autoprof.record.finisher.folder``)
decides the final status after its writes.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from autoprof import runfolder as artifacts
from autoprof.record import export
from autoprof.record.distributed import DistInfo, dist_info, shared_run_id
from autoprof.record.options import Options
from autoprof.record.session import driver
from autoprof.record.warn import note, warn_once
from autoprof.runfolder import files


@dataclass(frozen=True)
class Identity:
    """What names a session's runs (the manifest's identity fields besides the host's)."""

    name: str
    qualname: str
    source_file: str | None
    source_line: int | None


@dataclass(frozen=True)
class Untraced:
    """What the warm-up calls timed without the profiler (the manifest's untraced fields):
    each call, the time between two of them, and the closing sync's own cost; and what the
    first one's arguments held on the GPU (None: a region, or not read)."""

    call_ms: list[float]
    between_ms: list[float]
    idle_sync_ms: list[float]
    call_input_bytes: int | None = None
    call_inputs: list[str] | None = None  # the first call's arguments (inputs.describe_inputs)


@dataclass
class RunState:
    """What one run has produced so far (guarded by its session's lock)."""

    run_dir: Path
    run_id: str
    dist: DistInfo
    uses_cuda: bool
    activities: tuple[str, ...] = ("cpu",)
    started_at: str = field(default_factory=artifacts.utc_now_iso)
    ended_at: str | None = None
    steps_done: int = 0
    cycles: int = 0
    recorded_exported: int = 0  # recorded steps already in an exported trace
    skip_empty: bool = False  # stopping on flush: a cycle with no recorded step is dropped
    error: dict[str, str] | None = None
    wait_call_ms: list[float] = field(default_factory=list)  # steps before the first record
    recorded: int = 0  # steps torch's schedule recorded (RECORD, RECORD_AND_SAVE)
    requested: artifacts.Status | None = None  # the status handed to the finisher
    ended_by: str | None = None  # why the window ended before its schedule (interrupt.py)
    interrupted: bool = False  # ended by the program's exception or a signal, not a flush
    heap_mark: int | None = None  # the heap as the first recorded step began (fitting.py)
    # torch.profiler's own time before the first recorded step, spent inside the user's
    # calls (Driver.start_ms); None until that step begins
    profiler_start_ms: float | None = None
    # the first calls after the window, timed like warm-up calls (sent to the finisher)
    after_window_call_ms: list[float] = field(default_factory=list)
    # then, where the process uses CUDA, calls timed back to back as one block
    pace: PaceBlock | None = None
    after_window_iter_ms: float | None = None  # the block's time per iteration
    made_dirs: tuple[Path, ...] = ()  # the out_dir and name folders open_run created


@dataclass
class PaceBlock:
    """Calls after the window timed back to back (no sync between them): from the first
    one's start to the start of the call after the last, with the device synchronized there,
    over the calls (`ended` of them); `overlapped` when two of them ran at once (other
    threads)."""

    started_ns: int | None = None
    ended: int = 0
    running: int = 0
    overlapped: bool = False


def activities_of(options: Options, cuda_available: bool) -> tuple[str, ...]:
    """The activities asked for, else CPU plus CUDA where a device is there."""
    return options.activities or (("cpu", "cuda") if cuda_available else ("cpu",))


def open_run(who: Identity, options: Options, activities: tuple[str, ...]) -> RunState:
    """Create the run folder (a fresh run id on a clash); raises OSError on failure."""
    info = dist_info()
    out_dir = Path(os.path.abspath(options.resolved_out_dir()))  # chdir-proof
    run_id, problem = shared_run_id(who.name, artifacts.new_run_id(), info)
    if problem:
        warn_once("dist-run-id", f"autoprof: {problem}; each rank writes its own run folder")
    shared = info.initialized and problem is None
    made = tuple(p for p in (out_dir, out_dir / artifacts.safe_component(who.name))
                 if not p.exists())
    try:
        run_dir = _create(out_dir, who.name, run_id, shared)
    except OSError:
        _remove_empty(made)
        raise
    return RunState(run_dir, run_id, info, uses_cuda="cuda" in activities,
                    activities=activities, made_dirs=made)


def _create(out_dir: Path, name: str, run_id: str, shared: bool) -> Path:
    for _ in range(5):
        try:
            return artifacts.create_run_dir(out_dir, name, run_id, exist_ok=shared)
        except FileExistsError:
            run_id = artifacts.new_run_id()
    raise FileExistsError(f"no free run id under {out_dir / name}")


def _remove_empty(folders: tuple[Path, ...]) -> None:
    for folder in reversed(folders):  # innermost first; a folder holding anything stays
        with contextlib.suppress(OSError):
            folder.rmdir()


def discard_run(run: RunState) -> None:
    """A run whose folder could not be written (a full disk): remove the folders
    :func:`open_run` made, where they are empty, so nothing says a run was written."""
    _remove_empty((*run.made_dirs, run.run_dir))


def unwritable_dir(options: Options, name: str) -> Path:
    """Where a run of ``name`` would have gone (for the warning when it cannot be made)."""
    out_dir = Path(os.path.abspath(options.resolved_out_dir()))
    return out_dir / artifacts.safe_component(name)


def manifest(who: Identity, options: Options, run: RunState, untraced: Untraced,
             status: artifacts.Status) -> artifacts.Manifest:
    """The manifest as the recording process knows it."""
    dist = run.dist
    identity = {
        "name": who.name,
        "qualname": who.qualname,
        "source_file": who.source_file,
        "source_line": who.source_line,
        "run_id": run.run_id,
        **artifacts.host_identity(),
        "rank": dist.rank,
        "world_size": dist.world_size,
        "device": driver.device_info(run.uses_cuda),
    }
    built = artifacts.build_manifest(
        status=status,
        identity=identity,
        options=options.as_manifest(),
        started_at=run.started_at,
        ended_at=run.ended_at,
        warmup_call_ms=untraced.call_ms,
        warmup_between_ms=untraced.between_ms,
        idle_sync_ms=untraced.idle_sync_ms,
        wait_call_ms=run.wait_call_ms,
        steps_recorded=run.recorded,
        files=(),
        error=run.error,
    )
    extra: dict[str, object] = {**driver.threads_info(), **driver.backend_flags()}
    if run.profiler_start_ms is not None:
        extra["profiler_start_ms"] = round(run.profiler_start_ms, 3)
    if untraced.call_input_bytes is not None:
        extra["call_input_bytes"] = untraced.call_input_bytes
    if untraced.call_inputs is not None:
        extra["call_inputs"] = untraced.call_inputs
    return built.replace(requested_status=run.requested, ended_by=run.ended_by, extra=extra)


def write_manifest(run: RunState, content: artifacts.Manifest) -> None:
    """Write ``content`` as this rank's manifest (and the run's, on rank 0 or alone)."""
    dist = run.dist
    if dist.initialized:
        _write(run.run_dir / artifacts.rank_manifest(dist.rank), content)
        if dist.rank != 0:
            return
        content = content.replace(ranks=tuple(range(dist.world_size)))
    _write(run.run_dir / artifacts.MANIFEST, content)


def _write(path: Path, content: artifacts.Manifest) -> None:
    """``runfolder.write_manifest``'s bytes through the one atomic writer, looked up at call
    time (the disk-full tests replace it)."""
    files.atomic_write_bytes(path, content.to_json())


def requested_status(status: artifacts.Status, run: RunState,
                     options: Options) -> artifacts.Status:
    """The status handed to the finisher: failed on any error; ``repeat=0`` runs until
    stopped, so a flushed one whose cycles were saved is complete (each cycle is whole).
    A stop on another schedule exports its cycle in progress: that one is partial."""
    if run.error is not None:
        return "failed"
    if status == "partial" and options.schedule.repeat == 0 and run.cycles:
        return "complete"
    return status


def start_finisher(run: RunState) -> export.Finisher:
    """Start the run's finisher process; raises OSError when it cannot be started."""
    return export.Finisher.start(run.run_dir, run.dist.rank if run.dist.initialized else None)


def finisher_missing(run_dir: Path, exc: BaseException) -> str:
    return (f"autoprof: cannot start the finisher of {run_dir} ({type(exc).__name__}: "
            f"{exc}); the run will stay 'recording' until you run "
            f"`python -m autoprof.finish {run_dir}`")


def finisher_failed(run_dir: Path, problem: str) -> str:
    return (f"autoprof: the finisher of {run_dir} failed ({problem}); the run stays "
            f"'recording' until you run `python -m autoprof.finish {run_dir}` "
            "where autoprof can be imported")


def export_failed(name: str, path: Path, exc: BaseException) -> str:
    return (f"autoprof: could not write the profile of {name!r} to {path}: "
            f"{type(exc).__name__}: {exc}; the program goes on")


def finished_problem(name: str, run: RunState, finisher: export.Finisher) -> str | None:
    """After the finisher: the warning to give if the run failed or has no tables."""
    file = artifacts.manifest_name(run.dist.rank if run.dist.initialized else None)
    try:
        final = artifacts.read_manifest(run.run_dir / file, artifacts.MAX_MANIFEST_BYTES)
    except artifacts.ManifestError as exc:
        why = finisher.died() or f"{type(exc).__name__}: {exc}"
        return (f"autoprof: could not write the profile of {name!r} to "
                f"{run.run_dir}: the finisher could not finish it ({why})")
    error = final.error or {}
    if final.status == "failed" and error.get("phase") == "export":
        return (f"autoprof: could not write the profile of {name!r} to "
                f"{run.run_dir}: {error.get('type')}: {error.get('message')}")
    if final.tables_error:
        return (f"autoprof: {run.run_dir}: table.txt and ops.csv not written: "
                f"{final.tables_error}")
    return None


def schedule_need(options: Options) -> tuple[str, int]:
    """What one schedule takes, as a sum of its parts, and the calls it makes in all:
    ("3 warm-up calls + wait 1 + warmup 1 + active 3", 8). ``repeat=0`` counts one cycle."""
    s = options.schedule
    wait = 0 if s.skip_first_wait else s.wait
    parts = [f"{options.warmup_calls} warm-up call{'' if options.warmup_calls == 1 else 's'}"]
    if s.skip_first:
        parts.append(f"skip_first {s.skip_first}")
    cycle = f"wait {wait} + warmup {s.warmup} + active {s.active}"
    repeat = max(1, s.repeat)
    parts.append(cycle if repeat == 1 else f"{repeat} x ({cycle})")
    steps = s.total_steps if s.total_steps is not None else s.skip_first + s.cycle_steps - (
        s.wait - wait)
    return " + ".join(parts), options.warmup_calls + steps


def too_few_calls(calls: int, options: Options) -> str:
    """Why ``calls`` calls recorded less than the schedule, and the two ways out (options for
    a schedule of exactly ``calls`` calls, or more calls)."""
    need, total = schedule_need(options)
    fits = (f"warmup=1, active={calls - 1}" if calls >= 2 else "warmup=0, active=1")
    return (f"called {calls} time{'' if calls == 1 else 's'}; the schedule needs {need} = "
            f"{total} calls: pass warmup_calls=0, schedule=dict(wait=0, {fits}) or call it "
            "more")


def note_unrecorded(name: str, calls: int, options: Options) -> None:
    """A function that never got past its warm-up calls: no profiler ran, no folder."""
    note(f"autoprof: {name!r} recorded no step and wrote no run folder: "
         f"{too_few_calls(calls, options)}")


def note_end(name: str, run: RunState, status: str, options: Options, calls: int,
             handed_over: bool) -> None:
    """What is known when the profiler stops: the recorded steps (the schedule's active
    steps, not its wait or warm-up calls), not the final status (the finisher decides it,
    and warns when the run fails)."""
    total = options.schedule.total_steps
    want = None if total is None else options.schedule.active * options.schedule.repeat
    done = f"{run.recorded} step{'' if run.recorded == 1 else 's'}"
    if status == "failed":
        what = f"failed after {done}"
    elif run.recorded == 0:
        what = f"recorded no step ({too_few_calls(calls, options)}); the folder holds no trace"
    elif status == "partial" and run.interrupted:
        what = f"recorded partially ({done}; {run.ended_by})"
    elif status == "partial" and want is not None:
        why = too_few_calls(calls, options)
        what = f"recorded partially ({run.recorded} of {want} steps: {why})"
    elif status == "partial":
        what = f"recorded partially ({done})"
    else:
        what = f"recorded ({done})"
    then = ("finishing in the background" if handed_over else
            "left 'recording' for `python -m autoprof.finish`")
    note(f"autoprof: run of {name!r} {what}; {then}: {run.run_dir}")
