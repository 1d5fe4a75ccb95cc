"""Getting a finished profile onto disk without stalling the user's program.

Only the part that needs the live profiler runs while the program waits: kineto writes the
plain trace JSON to a hidden temporary file. Everything else (gzip into the final
``<worker>.<time_ns>.pt.trace.json.gz`` name, ``table.txt``/``ops.csv`` through
``autoprof.analysis.write_tables``, the final manifest) runs later, in order, on short-lived
non-daemon threads, so the interpreter finishes them before it exits.
"""

from __future__ import annotations

import gzip
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autoprof.runfolder import temp_name

TRACE_SUFFIX = ".pt.trace.json.gz"
GZIP_LEVEL = 1  # ~5x smaller than plain JSON at a fraction of level 9's time

_at_exit = False


def mark_exiting() -> None:
    """From now on jobs run inline: a new thread cannot be started at interpreter exit."""
    global _at_exit
    _at_exit = True


class Writer:
    """Runs one session's deferred jobs one after another, off the caller's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: threading.Thread | None = None

    def submit(self, job: Callable[[], None], background: bool = True) -> None:
        if not background or _at_exit:
            self.join()
            job()
            return
        with self._lock:
            previous = self._last

            def run() -> None:
                if previous is not None:
                    previous.join()
                job()

            thread = threading.Thread(target=run, name="autoprof-writer", daemon=False)
            thread.start()
            self._last = thread

    def join(self, timeout_s: float | None = None) -> None:
        with self._lock:
            last = self._last
        if last is not None and last is not threading.current_thread():
            last.join(timeout_s)


def trace_paths_for(run_dir: Path, worker: str) -> tuple[Path, Path]:
    """(hidden plain-JSON temporary, final gzipped name) for one schedule cycle, named as
    ``torch.profiler.tensorboard_trace_handler`` names its files."""
    final = run_dir / f"{worker}.{time.time_ns()}{TRACE_SUFFIX}"
    raw = final.with_name(f".{final.name[: -len('.gz')]}.{os.getpid()}.raw.tmp")
    return raw, final


def export_raw_trace(prof: Any, run_dir: Path, worker: str) -> tuple[Path, Path]:
    """Blocking part: the profiler writes its cycle to the hidden temporary file."""
    raw, final = trace_paths_for(run_dir, worker)
    prof.export_chrome_trace(str(raw))
    return raw, final


def gzip_into_place(raw: Path, final: Path) -> None:
    """Deferred part: compress under a temporary name, rename, drop the plain file."""
    tmp = temp_name(final)
    try:
        with open(raw, "rb") as src, gzip.open(tmp, "wb", compresslevel=GZIP_LEVEL) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, final)
    finally:
        for leftover in (tmp, raw):
            try:
                leftover.unlink()
            except OSError:
                pass


def write_tables(trace_paths: list[Path], run_dir: Path) -> tuple[list[Path], str | None]:
    """table.txt and ops.csv via the analysis layer; (paths, None) or ([], why not)."""
    try:
        analysis_write_tables = _analysis_write_tables()
    except Exception as exc:
        return [], f"autoprof.analysis.write_tables is not available ({type(exc).__name__}: {exc})"
    try:
        return [Path(p) for p in analysis_write_tables(trace_paths, run_dir)], None
    except Exception as exc:
        return [], f"write_tables failed ({type(exc).__name__}: {exc})"


def _analysis_write_tables() -> Callable[[list[Path], Path], list[Path]]:
    try:
        from autoprof.analysis import write_tables as fn
    except ImportError:  # the package re-export may lag behind the module that defines it
        from autoprof.analysis.report.tables import write_tables as fn
    return fn  # type: ignore[no-any-return]
