"""The finisher: turns a recorded run folder into a finished one, in its own process.

``python -m autoprof.finish RUN_DIR`` compresses each cycle's plain trace (``.<trace>.raw``)
into ``<trace>.pt.trace.json.gz``, checks that it parses, writes ``table.txt``/``ops.csv``
through the analysis layer and writes the manifest with its final status. The recording
process starts one finisher per run (``--watch``: it waits on its stdin, gets the run's
manifest when the run ends, or EOF when the process dies) in its own session and at low
priority, so the program neither waits for this work nor shares its GIL, and a Ctrl+C of the
job does not reach it.

Safe to run again or twice at once: a lock on the folder serializes finishers, and a folder
already finished is left alone. A folder still being recorded by a live process is skipped.
Never imports torch.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autoprof import runfolder as rf

GZIP_LEVEL = 1  # ~5x smaller than plain JSON at a fraction of level 9's time
NICE = 10
Manifest = dict[str, Any]


class FinishError(Exception):
    """The folder cannot be finished (not a run folder, unreadable manifest)."""


@contextlib.contextmanager
def folder_lock(run_dir: Path) -> Iterator[None]:
    """An exclusive lock on the run folder itself (no lock file to leave behind)."""
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: finishers are not serialized
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_manifest(path: Path) -> Manifest:
    try:
        if path.stat().st_size > rf.MAX_MANIFEST_BYTES:
            raise FinishError(f"{path}: too large to be a manifest")
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise FinishError(f"{path}: cannot read the manifest ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise FinishError(f"{path}: the manifest is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or "name" not in data:
        raise FinishError(f"{path}: not an autoprof manifest (no 'name' key)")
    return data


def _worker_prefix(manifest: Manifest) -> str:
    """Traces of this manifest's process: ``rank<R>.`` under torch.distributed, else all."""
    if int(manifest.get("world_size") or 1) > 1 and manifest.get("rank") is not None:
        return f"rank{manifest['rank']}."
    return ""


def _owned(hidden_name: str, prefix: str, rank: Any) -> bool:
    """Is this hidden file one of this worker's? Under torch.distributed ranks on other
    hosts share the folder, and their pids mean nothing here."""
    if not prefix:
        return True
    shared = (rf.MANIFEST, rf.TABLE_TXT, rf.OPS_CSV) if rank == 0 else ()
    return hidden_name.startswith(tuple(f".{p}" for p in (prefix, *shared)))


def _check_trace(data: bytes, name: str) -> None:
    """A cycle's trace is usable only if it is one JSON object with a traceEvents list."""
    try:
        trace = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{name} is not valid JSON ({exc}); the recording was cut short "
                         "or the profiler wrote a label it did not escape") from None
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError(f"{name} has no traceEvents list")


def compress(raw: Path) -> Path:
    """Check ``raw``, gzip it into its final name, remove it. Raises on a bad trace (the raw
    file is removed: it can never become usable) or a failed write (it is kept)."""
    final = raw.with_name(rf.final_trace_name(raw.name))
    data = raw.read_bytes()
    try:
        _check_trace(data, raw.name)
    except ValueError:
        raw.unlink()
        raise
    with rf.atomic_open(final) as out, gzip.GzipFile(
        filename="", mode="wb", fileobj=out, compresslevel=GZIP_LEVEL, mtime=0
    ) as gz:
        gz.write(data)
    raw.unlink()
    return final


def _traces(run_dir: Path, prefix: str) -> tuple[list[Path], list[Path]]:
    """(plain traces waiting, traces already compressed) of one worker, oldest first."""
    raws = sorted(p for p in run_dir.glob(f".{prefix}*{rf.RAW_SUFFIX}") if p.is_file())
    done = sorted(p for p in run_dir.glob(f"{prefix}*{rf.TRACE_SUFFIX}") if p.is_file())
    return raws, done


def _write_tables(traces: list[Path], run_dir: Path) -> tuple[list[str], str | None]:
    try:
        from autoprof.analysis.report.tables import write_tables
    except Exception as exc:
        return [], f"autoprof.analysis is not available ({type(exc).__name__}: {exc})"
    try:
        return [Path(p).name for p in write_tables(traces, run_dir)], None
    except Exception as exc:
        return [], f"write_tables failed ({type(exc).__name__}: {exc})"


def _decide(manifest: Manifest, cycles: int, error: dict[str, str] | None) -> Manifest:
    """The final status: what the recording process asked for, unless the traces say no."""
    asked = manifest.pop("requested_status", None)
    prior = manifest.get("error")
    if prior is None and error is not None:
        manifest["error"] = prior = error
    if prior is not None:
        status = "failed"
    elif cycles == 0 and asked != "partial":  # flushed before a recorded step: no trace
        status = "failed"
        manifest["error"] = {
            "type": "NoTrace",
            "message": "no trace was written" if asked else
            "the recording process ended before any trace was written",
            "phase": "export",
        }
    elif asked in rf.FINAL_STATUSES:
        status = asked
    else:  # the process died after exporting: whole cycles are kept
        repeat = int((manifest.get("options") or {}).get("schedule", {}).get("repeat", 1))
        status = "complete" if repeat == 0 or cycles >= repeat else "partial"
        manifest["ended_by"] = "the recording process ended before handing over its run"
    manifest["status"] = status
    return manifest


def finish_one(run_dir: Path, manifest_name: str, handoff: Manifest | None = None,
               tables: bool = True, this_host_only: bool = False) -> Manifest | None:
    """Finish the run described by ``manifest_name`` in ``run_dir``; None when there is
    nothing to do (already finished, or a live process still records it). With
    ``this_host_only``, a run recorded on another host is left alone too (whether its
    process lives cannot be known from here)."""
    with folder_lock(run_dir):
        path = run_dir / manifest_name
        manifest = dict(handoff) if handoff is not None else read_manifest(path)
        if handoff is None:
            if manifest.get("status") != "recording":
                return None
            if "requested_status" not in manifest and _recording_elsewhere(manifest):
                return None  # a live process still records it and has not handed it over
            if this_host_only and manifest.get("host") != socket.gethostname():
                return None
        prefix = _worker_prefix(manifest)
        for stale in rf.stale_temps(run_dir):
            if _owned(stale.name, prefix, manifest.get("rank")):
                with contextlib.suppress(OSError):
                    stale.unlink()
        for partial in run_dir.glob(f".{prefix}*{rf.RAW_SUFFIX}.tmp"):  # Kineto's own temp
            with contextlib.suppress(OSError):
                partial.unlink()
        raws, done = _traces(run_dir, prefix)
        error: dict[str, str] | None = None
        for raw in raws:
            try:
                done.append(compress(raw))
            except Exception as exc:
                error = error or rf.error_record(exc, "export")
        traces = sorted(set(done))
        if error is not None:  # a raw trace that could not be written is not kept either
            for raw in raws:
                with contextlib.suppress(OSError):
                    raw.unlink()
        handed_over = manifest.get("requested_status") is not None
        manifest = _decide(manifest, len(traces), error)
        if not handed_over and traces:  # only the folder tells what was recorded
            mtime = max(p.stat().st_mtime for p in traces)
            manifest["ended_at"] = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(mtime))
            active = int((manifest.get("options") or {}).get("schedule", {}).get("active", 0))
            manifest["steps_recorded"] = active * len(traces)
        names = [p.name for p in traces]
        if tables and traces and manifest.get("rank") in (0, None):
            table_names, problem = _write_tables(traces, run_dir)
            names += table_names
            manifest["tables_error"] = problem
        manifest["files"] = sorted(set(names))
        with contextlib.suppress(OSError):  # gone before the folder reads as finished
            (run_dir / rf.FINISH_LOG).unlink()
        _write_manifest(path, manifest)
        return manifest


def _recording_elsewhere(manifest: Manifest) -> bool:
    pid = manifest.get("pid")
    return (manifest.get("host") == socket.gethostname() and isinstance(pid, int)
            and pid != os.getppid() and rf.pid_alive(pid))


def _write_manifest(path: Path, manifest: Manifest) -> None:
    """Write the final manifest; if even that fails (disk full), a minimal failed one."""
    try:
        rf.atomic_write_json(path, manifest)
        return
    except OSError as exc:
        if manifest.get("error") is None or manifest.get("status") != "failed":
            manifest["error"] = rf.error_record(exc, "export")
        manifest["status"] = "failed"
    small = {k: manifest.get(k) for k in ("schema_version", "name", "run_id", "rank",
                                           "world_size", "status", "error", "files")}
    rf.atomic_write_json(path, small)


def merge_ranks(run_dir: Path, rank0: Manifest, timeout_s: float) -> Manifest:
    """Rank 0's ``manifest.json`` once every rank's own manifest is final, or ``partial``
    naming the ranks still missing after ``timeout_s``."""
    world = int(rank0.get("world_size") or 1)
    deadline = time.monotonic() + timeout_s
    missing = list(range(1, world))
    while True:
        missing = [r for r in missing if not _rank_final(run_dir, r)]
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    merged = {**rank0, "ranks": list(range(world))}
    if missing:
        merged["missing_ranks"] = missing
        if merged["status"] == "complete":
            merged["status"] = "partial"
    with folder_lock(run_dir):
        _write_manifest(run_dir / rf.MANIFEST, merged)
    return merged


def _rank_final(run_dir: Path, rank: int) -> bool:
    try:
        return read_manifest(run_dir / rf.rank_manifest(rank)).get("status") in rf.FINAL_STATUSES
    except FinishError:
        return False


def finish_folder(run_dir: Path, handoff: Manifest | None = None, rank: int | None = None,
                  rank_timeout_s: float = 0.0, this_host_only: bool = False
                  ) -> Manifest | None:
    """Finish one run folder, single-process or one rank of a torch.distributed run."""
    if not (run_dir / rf.MANIFEST).is_file() and rank is None:
        raise FinishError(f"{run_dir}: no {rf.MANIFEST} (not an autoprof run folder)")
    world = int((handoff or {}).get("world_size") or 1)
    if rank is None and handoff is None:
        ranks = sorted(run_dir.glob("rank*.manifest.json"))
        if not ranks:
            return finish_one(run_dir, rf.MANIFEST, this_host_only=this_host_only)
        result = None
        for path in ranks:
            result = finish_one(run_dir, path.name, this_host_only=this_host_only) or result
        top = read_manifest(run_dir / rf.MANIFEST)
        if top.get("status") == "recording" or top.get("missing_ranks"):
            rank0 = read_manifest(run_dir / rf.rank_manifest(0))
            return merge_ranks(run_dir, rank0, rank_timeout_s)
        return result
    if world <= 1 and rank is None:
        return finish_one(run_dir, rf.MANIFEST, handoff)
    rank = int(rank if rank is not None else (handoff or {})["rank"])
    mine = finish_one(run_dir, rf.rank_manifest(rank), handoff)
    if rank == 0 and mine is not None:
        return merge_ranks(run_dir, mine, rank_timeout_s)
    return mine


def _read_handoff(stream: Any) -> Manifest | None:
    """Wait for the recording process: a JSON line (its manifest) then EOF, or EOF alone
    when it died first."""
    data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
    for line in data.splitlines():
        with contextlib.suppress(ValueError):
            handoff = json.loads(line)
            if isinstance(handoff, dict) and "name" in handoff:
                return handoff
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autoprof.finish",
        description="Finish autoprof run folders left 'recording' (compress traces, write "
                    "tables and the final manifest). Safe to run twice.")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--watch", action="store_true",
                        help="wait on stdin for the recording process's manifest (internal)")
    parser.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rank-timeout", type=float, default=60.0, metavar="S",
                        help="how long rank 0 waits for the other ranks (default 60)")
    args = parser.parse_args(argv)
    handoff = None
    if args.watch:
        handoff = _read_handoff(sys.stdin)
        with contextlib.suppress(OSError):
            os.nice(NICE)
    status = 0
    for run_dir in args.run_dirs:
        try:
            result = finish_folder(run_dir, handoff, args.rank, args.rank_timeout)
        except (FinishError, OSError) as exc:
            print(f"autoprof.finish: {exc}", file=sys.stderr)
            status = 1
            continue
        if args.watch:
            with contextlib.suppress(OSError):
                (run_dir / rf.FINISH_LOG).unlink()  # kept only when something went wrong
        else:
            what = result["status"] if result else "nothing to do (finished, or still recording)"
            print(f"{run_dir}: {what}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
