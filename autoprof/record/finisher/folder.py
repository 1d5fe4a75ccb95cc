"""The finisher: turns a recorded run folder into a finished one, in its own process.

``python -m autoprof.finish RUN_DIR`` checks that each cycle's plain trace (``.<trace>.raw``)
parses (streamed, in bounded memory), compresses it into ``<trace>.pt.trace.json.gz``, writes
``table.txt``/``ops.csv`` through the analysis layer and writes the manifest with its final
status (``autoprof.runfolder.final_status``). A plain trace is removed only once its copy is
written, fsynced and read back the same; any error keeps it, fails the run with the reason,
and records in the manifest's ``retry`` what the next finish decides from. The recording
process starts one finisher per run (``--watch``: it waits on its stdin, gets the run's
manifest when the run ends, or EOF when the process dies) in its own session and at low
priority, so the program neither waits for this work nor shares its GIL, and a Ctrl+C of the
job does not reach it; before it starts it waits while the program keeps every core busy
(record/finisher/cpu_gate.py).

Safe to run again or twice at once: a lock on the folder serializes finishers, and a folder
already finished is left alone (unless it kept a plain trace: then it is finished again). A
folder still being recorded by a live process is skipped. Never imports torch.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gzip
import os
import socket
import sys
import time
import zlib
from pathlib import Path

from autoprof import env
from autoprof import runfolder as rf
from autoprof.record.finisher.after_window import Pipe, read_handoff, record_after_window
from autoprof.record.finisher.cpu_gate import CpuGate, work_at_idle_priority
from autoprof.runfolder import Manifest
from autoprof.runfolder.trace_check import check_trace

GZIP_LEVEL = 1  # ~5x smaller than plain JSON at a fraction of level 9's time
CHUNK_BYTES = 1 << 20
NICE = 10
folder_lock = rf.folder_lock
_recorder: list[int] = []  # --watch: the recording process's pid (its pipe's end: gone)


class FinishError(Exception):
    """The folder cannot be finished (not a run folder, unreadable manifest)."""


def read_manifest(path: Path) -> Manifest:
    try:
        return rf.read_manifest(path, rf.MAX_MANIFEST_BYTES)
    except rf.ManifestError as exc:
        raise FinishError(str(exc)) from None


def _owned(hidden_name: str, prefix: str, rank: int | None) -> bool:
    """Is this hidden file one of this worker's? Under torch.distributed ranks on other
    hosts share the folder, and their pids mean nothing here."""
    if not prefix:
        return True
    shared = (rf.MANIFEST, rf.TABLE_TXT, rf.OPS_CSV) if rank == 0 else ()
    return hidden_name.startswith(tuple(f".{p}" for p in (prefix, *shared)))


def compress(raw: Path) -> Path:
    """Check ``raw`` (streamed, bounded memory), gzip it into its final name, read the copy
    back and compare it, and only then remove ``raw``. On any error (a bad trace, a failed
    write, no memory) the error goes on and ``raw`` stays: never the only copy deleted."""
    final = raw.with_name(rf.final_trace_name(raw.name))
    check_trace(raw)
    crc, size = _write_gzip(raw, final)
    try:
        _same_content(final, crc, size, raw.name)
    except BaseException:
        with contextlib.suppress(OSError):
            final.unlink()  # the copy that does not read back; the raw trace stays
        raise
    _fsync_dir(raw.parent)  # the renamed copy is on disk before the raw one goes
    raw.unlink()
    return final


def _write_gzip(raw: Path, final: Path) -> tuple[int, int]:
    """Stream ``raw`` into ``final`` (written under a temporary name, fsynced, renamed);
    the CRC-32 and length of what was read."""
    crc, size = 0, 0
    with raw.open("rb") as src, rf.atomic_open(final) as out, gzip.GzipFile(
        filename="", mode="wb", fileobj=out, compresslevel=GZIP_LEVEL, mtime=0
    ) as gz:
        while chunk := src.read(CHUNK_BYTES):
            crc, size = zlib.crc32(chunk, crc), size + len(chunk)
            gz.write(chunk)
    return crc, size


def _same_content(final: Path, crc: int, size: int, raw_name: str) -> None:
    """Raise OSError unless ``final`` decompresses to the bytes that were read."""
    got_crc, got_size = 0, 0
    with gzip.open(final, "rb") as fh:
        while chunk := fh.read(CHUNK_BYTES):
            got_crc, got_size = zlib.crc32(chunk, got_crc), got_size + len(chunk)
    if (got_crc, got_size) != (crc, size):
        raise OSError(f"{final.name} does not read back as {raw_name} ({got_size} of {size} "
                      "bytes, or different content)")


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot sync a folder: nothing more to do
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


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


def _to_finish(manifest: Manifest, handed_over: bool, this_host_only: bool,
               watch: bool = False) -> bool:
    """Is there anything for this finisher to do? A run handed over always; one that kept a
    plain trace after a failed write when asked by name (``python -m autoprof.finish``, not
    the CLI or viewer opening it: ``this_host_only``); one read from the folder only while it
    says ``recording``, no live process still records it, and (with ``this_host_only``) it
    was recorded here."""
    if handed_over or (manifest.retry is not None and not this_host_only):
        return True  # (a plain trace kept after a failed write: finish it again)
    if manifest.status != "recording":
        return False
    if manifest.requested_status is None and _recording_elsewhere(manifest, watch):
        return False  # a live process still records it and has not handed it over
    return not (this_host_only and manifest.host != socket.gethostname())


def _clear_temps(run_dir: Path, manifest: Manifest) -> None:
    """Remove this worker's temporary files whose writer is gone, and Kineto's own."""
    prefix = manifest.trace_prefix
    for stale in rf.stale_temps(run_dir):
        if _owned(stale.name, prefix, manifest.rank):
            rf.remove_quietly(stale)  # a file, or the private folder of a torch export
    for partial in run_dir.glob(f".{prefix}*{rf.RAW_SUFFIX}.tmp"):
        with contextlib.suppress(OSError):
            partial.unlink()


def _compress_all(run_dir: Path, prefix: str
                  ) -> tuple[list[Path], dict[str, str] | None, list[str]]:
    """Every trace of this worker, compressed; the first error of the ones that failed and
    the names of the plain traces kept (every failure keeps its plain trace)."""
    raws, done = _traces(run_dir, prefix)
    error: dict[str, str] | None = None
    kept = []
    for raw in raws:
        try:
            done.append(compress(raw))
        except ValueError as exc:  # it can never parse: kept to look at, not retried
            error = error or _kept(exc, f"the plain trace {raw.name} is kept")
        except Exception as exc:  # a failed write, MemoryError: another finish may succeed
            kept.append(raw.name)
            error = error or _kept(exc, f"the plain trace {raw.name} is kept: run `python -m "
                                        f"autoprof.finish {run_dir}` again to retry")
    return sorted(set(done)), error, kept


def _kept(exc: BaseException, note: str) -> dict[str, str]:
    error = rf.error_record(exc, "export")
    error["message"] += f" ({note})"
    return error


def finish_one(run_dir: Path, manifest_name: str, handoff: Manifest | None = None,
               tables: bool = True, this_host_only: bool = False, watch: bool = False
               ) -> Manifest | None:
    """Finish the run described by ``manifest_name`` in ``run_dir``; None when there is
    nothing to do (already finished, or a live process still records it). With
    ``this_host_only``, a run recorded on another host is left alone too (whether its
    process lives cannot be known from here). A folder with nothing to do is told from its
    manifest without the lock (reading a finished run never waits); the lock is waited for
    at most ``rf.lock_wait_s`` (the readers' shorter wait with ``this_host_only``)."""
    path = run_dir / manifest_name
    if handoff is None and not _to_finish(read_manifest(path), False, this_host_only, watch):
        return None
    with folder_lock(run_dir, rf.lock_wait_s(reader=this_host_only)):
        manifest = handoff if handoff is not None else read_manifest(path)
        if not _to_finish(manifest, handoff is not None, this_host_only, watch):
            return None
        manifest = rf.reopened(manifest)
        _clear_temps(run_dir, manifest)
        traces, error, kept = _compress_all(run_dir, manifest.trace_prefix)
        handed_over = manifest.requested_status is not None
        retry = {"requested_status": manifest.requested_status, "error": manifest.error,
                 "raw": kept} if kept else None
        manifest = rf.final_status(manifest, len(traces), error).replace(retry=retry)
        if not handed_over and traces:  # the process died: the folder tells the rest
            manifest = _after_a_death(manifest, traces)
        names = rf.with_lines(run_dir, [p.name for p in traces], manifest.trace_prefix)
        if tables and traces and manifest.rank in (0, None):
            table_names, problem = _write_tables(traces, run_dir)
            names += table_names
            manifest = manifest.replace(tables_error=problem)
        manifest = manifest.replace(files=tuple(sorted(set(names))))
        with contextlib.suppress(OSError):  # gone before the folder reads as finished
            (run_dir / rf.FINISH_LOG).unlink()
        return _write_manifest(path, manifest)


def _after_a_death(manifest: Manifest, traces: list[Path]) -> Manifest:
    """A run whose process died before handing it over: it ended when its last trace was
    written; its steps are what the session last wrote (each exported cycle updates
    ``steps_recorded``), or, from an autoprof that did not, whole cycles of ``active``."""
    mtime = max(p.stat().st_mtime for p in traces)
    return manifest.replace(
        ended_at=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(mtime)),
        steps_recorded=manifest.steps_recorded or rf.steps_in(manifest, len(traces)))


def _recording_elsewhere(manifest: Manifest, watch: bool) -> bool:
    """Does a live process here still record the run? Not the recorder of the finisher it
    started (``watch``), whatever ``/proc`` says: its pipe ended with no hand-over, so it
    died or gave up (killed mid-window, it may still be exiting). A summary or viewer it
    opened between cycles has it as its parent, still recording."""
    pid = manifest.pid
    return (manifest.host == socket.gethostname() and pid is not None
            and not (watch and pid in _recorder) and rf.pid_alive(pid))


def _write_manifest(path: Path, manifest: Manifest) -> Manifest:
    """Write the final manifest, or if that fails (disk full) a minimal failed one: which."""
    try:
        rf.write_manifest(path, manifest)
        return manifest
    except OSError as exc:
        if manifest.error is None or manifest.status != "failed":
            manifest = manifest.replace(error=rf.error_record(exc, "export"))
        manifest = manifest.replace(status="failed")
    small = Manifest(name=manifest.name, schema_version=manifest.schema_version,
                     run_id=manifest.run_id, rank=manifest.rank,
                     world_size=manifest.world_size, status=manifest.status,
                     error=manifest.error, files=manifest.files)
    rf.write_manifest(path, small)
    return manifest


def merge_ranks(run_dir: Path, rank0: Manifest, timeout_s: float) -> Manifest:
    """Write rank 0's ``manifest.json`` (``merged_ranks``), waiting for the others unlocked."""
    merged = merged_ranks(run_dir, rank0, timeout_s)
    with folder_lock(run_dir):
        return _write_manifest(run_dir / rf.MANIFEST, merged)


def merged_ranks(run_dir: Path, rank0: Manifest, timeout_s: float) -> Manifest:
    """A torch.distributed run's record: rank 0's, naming every rank. A rank still recording
    after ``timeout_s``, or failed (killed before its trace), is missing (``missing_ranks``,
    ``missing_reason``): a ``complete`` run becomes ``partial``, as with a ``partial`` rank."""
    deadline = time.monotonic() + timeout_s
    records = _rank_records(run_dir, rank0.world_size)
    while not all(m and m.is_final for m in records.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
        records = _rank_records(run_dir, rank0.world_size)
    reasons = {r: why for r, m in records.items() if (why := _missing_why(m)) is not None}
    merged = rank0.replace(ranks=tuple(range(rank0.world_size)),
                           missing_ranks=tuple(reasons) or None,
                           missing_reason="; ".join(f"rank {r} {why}"
                                                    for r, why in reasons.items()) or None)
    partly = reasons or any(m is not None and m.status == "partial" for m in records.values())
    if partly and merged.status == "complete":
        merged = merged.replace(status="partial")
    return merged


def _rank_records(run_dir: Path, world: int) -> dict[int, Manifest | None]:
    return {rank: _rank_record(run_dir, rank) for rank in range(1, world)}


def _rank_record(run_dir: Path, rank: int) -> Manifest | None:
    with contextlib.suppress(FinishError):
        return read_manifest(run_dir / rf.rank_manifest(rank))
    return None


def _missing_why(record: Manifest | None) -> str | None:
    """Why a rank's data is missing from the run; None when it is there."""
    if record is None:
        return "wrote no readable manifest"
    if not record.is_final:
        return "is still recording (or its finisher never ran)"
    if record.status != "failed":
        return None
    error = record.error or {}
    return f"failed: {error.get('type', 'error')}: {error.get('message', '')}".rstrip(": ")


def _finish_found(run_dir: Path, rank_timeout_s: float, this_host_only: bool,
                  watch: bool = False) -> Manifest | None:
    """Finish what the folder holds (``python -m autoprof.finish RUN_DIR``, the CLI, the
    viewer): its one manifest, or every rank's and then rank 0's merged one. A run already
    merged with missing ranks is written again only when a rank's record changed since."""
    ranks = sorted(run_dir.glob(rf.RANK_MANIFEST_GLOB))
    if not ranks:
        return finish_one(run_dir, rf.MANIFEST, this_host_only=this_host_only, watch=watch)
    result = None
    for path in ranks:
        result = finish_one(run_dir, path.name, this_host_only=this_host_only,
                            watch=watch) or result
    top = read_manifest(run_dir / rf.MANIFEST)
    if top.status != "recording" and not top.missing_ranks:
        return result
    rank0 = read_manifest(run_dir / rf.rank_manifest(0))
    if top.status == "recording" or merged_ranks(run_dir, rank0, 0.0) != top:
        return merge_ranks(run_dir, rank0, rank_timeout_s)
    return result  # merged before from the same records: nothing to write


def finish_folder(run_dir: Path, handoff: Manifest | None = None, rank: int | None = None,
                  rank_timeout_s: float = 0.0, this_host_only: bool = False,
                  watch: bool = False) -> Manifest | None:
    """Finish one run folder, single-process or one rank of a torch.distributed run;
    ``watch``: as the finisher the recording session started (``--watch``)."""
    if not (run_dir / rf.MANIFEST).is_file() and rank is None:
        raise FinishError(f"{run_dir}: no {rf.MANIFEST} (not an autoprof run folder)")
    if rank is None and handoff is None:
        return _finish_found(run_dir, rank_timeout_s, this_host_only, watch)
    world = handoff.world_size if handoff is not None else 1
    if world <= 1 and rank is None:
        return finish_one(run_dir, rf.MANIFEST, handoff)
    if rank is None:
        if handoff is None or handoff.rank is None:
            raise FinishError(f"{run_dir}: the handed-over manifest names no rank")
        rank = handoff.rank
    mine = finish_one(run_dir, rf.rank_manifest(rank), handoff, watch=watch)
    if rank == 0 and mine is not None:
        return merge_ranks(run_dir, mine, rank_timeout_s)
    return mine


def main(argv: list[str] | None = None, early_input: bytes = b"") -> int:
    """The command; ``early_input``: what the entry point already read of stdin."""
    parser = argparse.ArgumentParser(
        prog="python -m autoprof.finish",
        description="Finish autoprof run folders left 'recording' (compress traces, write "
                    "tables and the final manifest). Safe to run twice.")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--watch", action="store_true",
                        help="wait on stdin for the recording process's manifest (internal)")
    for hidden in ("--rank", "--recorder"):  # internal: the rank, the recording pid
        parser.add_argument(hidden, type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rank-timeout", type=float, default=60.0, metavar="S",
                        help="how long rank 0 waits for the other ranks (default 60)")
    args = parser.parse_args(argv)
    handoff, pipe = None, Pipe(getattr(sys.stdin, "buffer", sys.stdin), early_input)
    if args.watch:
        program = args.recorder or os.getppid()  # the recording process
        _recorder[:] = [program]
        handoff = read_handoff(pipe)  # the run's manifest; the calls after it come later
        with contextlib.suppress(OSError):
            os.nice(NICE)
        CpuGate(program, env.finish_yield_s())()  # before the lock: readers never wait on it
        work_at_idle_priority()
    status = 0
    for run_dir in args.run_dirs:
        try:
            result = finish_folder(run_dir, handoff, args.rank, args.rank_timeout,
                                   watch=args.watch)
        except (FinishError, OSError) as exc:
            print(f"autoprof.finish: {exc}", file=sys.stderr)
            status = 1
            continue
        if args.watch:
            if handoff is not None and result is not None:
                record_after_window(run_dir, handoff, pipe)
            with contextlib.suppress(OSError):
                (run_dir / rf.FINISH_LOG).unlink()  # kept only when something went wrong
        else:
            what = result.status if result else "nothing to do (finished, or still recording)"
            print(f"{run_dir}: {what}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
