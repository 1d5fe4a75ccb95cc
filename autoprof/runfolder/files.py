"""The run-folder contract, shared by the writer (recording, the finisher) and the readers.

A run folder ``<out_dir>/<name>/<run_id>/`` holds ``manifest.json`` (``rank<R>.manifest.json``
per rank under torch.distributed), one gzipped Chrome trace per schedule cycle
(``<worker>.<time_ns>.pt.trace.json.gz``), and ``table.txt``/``ops.csv``. While a run records,
each cycle's plain trace waits under a hidden ``.<trace name>.raw`` name for the finisher
(``python -m autoprof.finish``), which compresses it, writes the tables and decides the status.

A reader never sees half a file: everything is written under a hidden temporary name
(``.<name>.<pid>.<random>.tmp``, created exclusively: ``owned.py``) in the same folder, then
renamed into place, never over something autoprof did not write. No torch import.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import os
import platform
import re
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from autoprof.runfolder.owned import create_temp, replace_own
from autoprof.units import safe_text

SCHEMA_VERSION = 1
Status = Literal["recording", "complete", "failed", "partial"]
STATUSES: tuple[Status, ...] = ("recording", "complete", "failed", "partial")
FINAL_STATUSES: tuple[Status, ...] = ("complete", "failed", "partial")
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 16 * 1024**2
TRACE_SUFFIX = ".pt.trace.json.gz"
RAW_SUFFIX = ".raw"  # a cycle's plain trace before the finisher compresses it
TABLE_TXT = "table.txt"
OPS_CSV = "ops.csv"
FINISH_LOCK = ".finish.lock"
LINES_PREFIX = "lines."  # the source-lines trace of a worker: lines.<worker>.json.gz
LINES_SUFFIX = ".json.gz"  # (not a *.pt.trace.json* name: the loader never reads it as a cycle)
FINISH_LOG = ".finish.log"
MAX_ERROR_CHARS = 4000  # an exception message longer than this is cut in the manifest
# temp_name's scheme (.<name>.<pid>.<hex>.tmp; 6 hex digits in older versions, 16 now) first:
# its random part may be all digits, and read by the older scheme (.<name>.<pid>.tmp) it would
# pass for the pid
_TEMPS = (re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{6,32}\.tmp$"),
          re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$"))


def raw_trace_name(final_name: str) -> str:
    """``w.1.pt.trace.json.gz`` -> ``.w.1.pt.trace.json.raw``: hidden, found by the finisher."""
    return f".{final_name[: -len('.gz')]}{RAW_SUFFIX}"


def final_trace_name(raw_name: str) -> str:
    """The inverse of :func:`raw_trace_name`."""
    return f"{raw_name[1 : -len(RAW_SUFFIX)]}.gz"


def kineto_label(name: str) -> str:
    """A ``record_function`` label Kineto can write into JSON: it writes labels unescaped, so
    a double quote, a backslash or a control character would make the whole trace invalid."""
    return "".join("'" if c == '"' else "/" if c == "\\" else " " if c < " " else c
                   for c in name)


def new_run_id(now: _dt.datetime | None = None) -> str:
    """``YYYYmmdd-HHMMSS-<6 hex>``: sortable by time, random suffix so processes never clash."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return f"{now:%Y%m%d-%H%M%S}-{os.urandom(3).hex()}"


def utc_now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


@contextlib.contextmanager
def atomic_open(path: Path, fsync: bool = True) -> Iterator[IO[bytes]]:
    """A binary file that appears at ``path`` only when the ``with`` block ends without error;
    on any error the temporary file is removed and the error goes on. The one way autoprof
    writes a file (``owned``): created exclusively under an unguessable temporary name, no
    link followed, renamed onto ``path`` only where ``path`` is absent or a regular file
    (else :class:`NotOurs`). ``fsync=False`` for caches, which may be lost in a power cut
    without harm."""
    fd, tmp = create_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        replace_own(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def atomic_write_bytes(path: Path, data: bytes, fsync: bool = True) -> None:
    with atomic_open(path, fsync=fsync) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str, fsync: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, default=str) + "\n").encode())


WRITER_LOCK_WAIT_S = 120.0  # a finisher or the what-if record waits this long for the folder
READER_LOCK_WAIT_S = 10.0  # the CLI or viewer opening a run left recording waits this long
_LOCK_POLL_S = 0.05


class FolderLocked(OSError):
    """The run folder's lock is still held after the bounded wait: the message names the
    folder, who holds it (when the OS says) and how long this process waited."""


def lock_wait_s(reader: bool = False) -> float:
    """How long to wait for a folder's lock: ``AUTOPROF_LOCK_WAIT_S`` when set, else
    :data:`READER_LOCK_WAIT_S` for readers, :data:`WRITER_LOCK_WAIT_S` for writers."""
    from autoprof import env

    return env.lock_wait_s(READER_LOCK_WAIT_S if reader else WRITER_LOCK_WAIT_S)


@contextlib.contextmanager
def folder_lock(run_dir: Path, wait_s: float | None = None) -> Iterator[None]:
    """An exclusive lock on the run folder itself (no lock file to leave behind): every
    writer of a finished folder's manifest (the finisher, the what-if record) holds it.
    Waits at most ``wait_s`` (default :func:`lock_wait_s`), then raises FolderLocked; a
    stopped or stuck holder never hangs the caller."""
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        try:
            import fcntl  # noqa: F401  (only: is this POSIX?)
        except ImportError:  # pragma: no cover - not POSIX: writers are not serialized
            yield
            return
        _lock_within(fd, run_dir, lock_wait_s() if wait_s is None else wait_s)
        yield
    finally:
        os.close(fd)


def _lock_within(fd: int, run_dir: Path, wait_s: float) -> None:
    import fcntl

    started = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited_s = time.monotonic() - started
            if waited_s >= wait_s:
                raise FolderLocked(f"{run_dir}: locked by "
                                   f"{lock_holder(run_dir)}; gave up after waiting "
                                   f"{waited_s:.1f} s (AUTOPROF_LOCK_WAIT_S)") from None
            time.sleep(min(_LOCK_POLL_S, max(wait_s - waited_s, 0.0)))


def lock_holder(path: Path) -> str:
    """Who holds the flock on ``path``, from /proc/locks (Linux): ``pid 123 (python -m
    autoprof.finish ...)``, or ``another process`` where that cannot be told."""
    try:
        st = os.stat(path)
        inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            pids = [int(f[4]) for f in (line.split() for line in fh)
                    if len(f) > 5 and f[1] == "FLOCK" and f[5] == inode and "->" not in f]
    except (OSError, ValueError):
        return "another process"
    if not pids:
        return "another process"
    try:
        with open(f"/proc/{pids[0]}/cmdline", "rb") as fh:
            command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    return f"pid {pids[0]}" + (f" ({safe_text(command, 120)})" if command else "")


def stale_temps(folder: Path) -> list[Path]:
    """Temporary files in ``folder`` whose writing process is gone (killed, disk full)."""
    stale = []
    for path in folder.iterdir():
        match = next((m for m in (t.match(path.name) for t in _TEMPS) if m), None)
        if match and not pid_alive(int(match["pid"])):
            stale.append(path)
    return stale


def pid_alive(pid: int) -> bool:
    """Is a process with this id running on this host (a zombie counts as gone)?"""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not _proc_is_ours():
        return True  # /proc shows another pid namespace: its pid here is not ours to judge
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


@functools.cache
def _proc_is_ours() -> bool:
    """Does /proc show this process's pid namespace (not so in some containers)?"""
    try:
        with open("/proc/self/stat", "rb") as fh:
            return int(fh.read().split()[0]) == os.getpid()
    except (OSError, ValueError, IndexError):
        return False


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def error_record(exc: BaseException, phase: str) -> dict[str, str]:
    """``{type, message, phase}`` for the manifest; never raises (an exception whose
    ``str()`` raises still gets a record) and cuts very long messages."""
    try:
        message = str(exc)
    except Exception as problem:
        message = f"<str() of the exception raised {type(problem).__name__}>"
    if len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + f"... ({len(message)} characters, cut)"
    return {"type": type(exc).__name__, "message": message, "phase": phase}


def create_run_dir(out_dir: Path, name: str, run_id: str, exist_ok: bool = False) -> Path:
    """Make ``<out_dir>/<name>/<run_id>``; with ``exist_ok=False`` a clash raises
    FileExistsError so the caller picks another id (two processes never share a folder)."""
    run_dir = out_dir / safe_component(name) / run_id
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(exist_ok=exist_ok)
    return run_dir


def safe_component(name: str) -> str:
    """A function name as one folder name: path separators and odd characters become ``_``."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).strip(".")
    return cleaned or "unnamed"


def versions() -> dict[str, str | None]:
    from autoprof._version import __version__

    torch = sys.modules.get("torch")
    return {
        "autoprof": __version__,
        "torch": getattr(torch, "__version__", None),
        "python": platform.python_version(),
    }


def host_identity() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def lines_name(worker: str) -> str:
    """The file name of ``worker``'s source-lines trace (``*`` gives the glob of them all)."""
    return f"{LINES_PREFIX}{worker}{LINES_SUFFIX}"


def lines_files(run_dir: Path, trace_prefix: str) -> list[str]:
    """The source-lines traces in ``run_dir`` of the manifest whose traces start with
    ``trace_prefix`` (``rank<R>.``, or ``""`` for every worker)."""
    return sorted(p.name for p in run_dir.glob(lines_name(trace_prefix.rstrip(".") or "*")))


def with_lines(run_dir: Path, trace_names: list[str], trace_prefix: str) -> list[str]:
    """A manifest's files: its traces and, when there is one, the source-lines traces that go
    with them (a run with no trace lists none: its lines match no step)."""
    return trace_names + (lines_files(run_dir, trace_prefix) if trace_names else [])
