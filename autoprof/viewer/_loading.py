"""Loading, cached: one analysis call per (path, modification times); errors kept as text.

The viewer never parses a trace itself: it calls `autoprof.load` / `find_runs` / `compare`.
A run that fails to load yields its one-line error; other runs are unaffected. A run of many
rank traces (`analysis/scale/auto.py`, the rule `autoprof summary` follows) is analysed rank
by rank instead (analysis/scale: each rank on its own in a process pool, the run a reduce of
their small results, cached beside the traces), so a thousand ranks never become one table in
the server's memory: its outcome is a `RunAnswer`, which the Overview and Ranks pages show
(viewer/_shown.py: what a loaded run is, and the one place its two kinds are told apart).
"""

from __future__ import annotations

import atexit
import hashlib
import multiprocessing
import os
import shutil
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias
from weakref import WeakKeyDictionary

import pandas as pd
import streamlit as st

from autoprof import runfolder
from autoprof.analysis.loader.inputs import may_be_trace_name
from autoprof.viewer._paths import check_tree, inside
from autoprof.viewer._shown import (
    Loaded,
    Shown,
    answer_row,
    one_table,
    rank_by_rank,
    report_row,
)

if TYPE_CHECKING:
    from autoprof.analysis import Run
    from autoprof.analysis.report.model import Report
    from autoprof.analysis.scale.reduce import RunAnswer

Progress = Callable[..., None]
Outcome: TypeAlias = "tuple[Shown | None, str]"  # the run, or None and the error line
_BLOCK = 1024**2


def signature(path: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime_ns, size) of a trace file, or of the traces and manifests in a folder.

    Other files (such as a cache the analysis writes beside a trace) do not count.
    """
    if not path.is_dir():
        s = path.stat()
        return ((path.name, s.st_mtime_ns, s.st_size),)
    items: list[tuple[str, int, int]] = []
    for entry in sorted(path.iterdir()):
        if not may_be_trace_name(entry.name):
            continue
        try:
            s = entry.stat()
        except OSError:
            continue
        items.append((entry.name, s.st_mtime_ns, s.st_size))
    return tuple(items)


def _error_line(path: Path, exc: BaseException) -> str:
    from autoprof.analysis import TraceError

    if isinstance(exc, TraceError):
        return str(exc)
    return f"{path}: {type(exc).__name__}: {exc}"


class RunStore:
    """Process-wide LRU of load outcomes keyed by (path, signature), shared by all sessions.

    Not a plain @st.cache_resource function because loading draws a progress bar, and
    Streamlit forbids cached functions from touching elements created outside them.
    """

    def __init__(self, max_entries: int = 32) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[tuple[str, tuple[Any, ...]], Outcome] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, tuple[Any, ...]], threading.Lock] = {}

    def get_or_load(self, path: str, sig: tuple[Any, ...],
                    progress: Progress | None) -> Outcome:
        """(run, "") or (None, error line); loads at most once per key, even concurrently."""
        key = (path, sig)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            outcome = _load(Path(path), progress)
            with self._lock:
                self._items[key] = outcome
                self._key_locks.pop(key, None)
                while len(self._items) > self.max_entries:
                    self._items.popitem(last=False)
            return outcome

    def peek(self, path: str, sig: tuple[Any, ...]) -> Outcome | None:
        """The stored outcome, or None if this (path, signature) was never loaded."""
        with self._lock:
            return self._items.get((path, sig))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


@st.cache_resource(show_spinner=False)
def run_store() -> RunStore:
    """The one RunStore of this server process."""
    return RunStore()


def _load(path: Path, progress: Progress | None) -> Outcome:
    import autoprof

    try:
        if path.is_dir():
            from autoprof.analysis.scale.auto import reads_rank_by_rank

            if reads_rank_by_rank(path):
                return _load_at_scale(path, progress), ""
        return autoprof.load(path, progress=progress), ""
    except Exception as e:  # noqa: BLE001 - any failure is shown for this run only
        return None, _error_line(path, e)


def _load_at_scale(path: Path, progress: Progress | None) -> RunAnswer:
    """The run's ``RunAnswer``: its ranks analysed by a pool of this machine's cores. The
    workers start from a fork server, never forked from the server's threads."""
    from concurrent.futures import ProcessPoolExecutor

    from autoprof.analysis.scale import summarize_ranks

    def ranks_done(done: int, total: int) -> None:
        if progress is not None:
            progress(done / max(total, 1), f"{done} of {total} ranks analysed")

    jobs = max(1, os.cpu_count() or 1)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("forkserver")) as pool:
        return summarize_ranks(path, executor=pool, progress=ranks_done)


class _Bar:
    """Adapts the loader's progress callback (fraction and/or message) to st.progress."""

    def __init__(self, slot: Any, label: str) -> None:
        self.slot = slot
        self.label = label
        self.bar: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        fraction: float | None = None
        message = ""
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, bool):
                continue
            if isinstance(a, int | float) and fraction is None:
                fraction = float(a)
            elif isinstance(a, str):
                message = a
        frac = 0.0 if fraction is None else min(max(fraction, 0.0), 1.0)
        text = f"Loading {self.label}" + (f": {message}" if message else "")
        if self.bar is None:
            self.bar = self.slot.progress(frac, text=text)
        else:
            self.bar.progress(frac, text=text)


def _resolve(root: Path, path: Path) -> tuple[Path, tuple[Any, ...]]:
    real = inside(root, path)
    check_tree(root, real)
    return real, signature(real)


def load_run(root: Path, path: Path, label: str | None = None) -> Loaded:
    """Load a run folder or trace inside `root` (cached); never raises for bad input."""
    name = label or path.name
    try:
        real, sig = _resolve(root, path)
    except (OSError, ValueError) as e:  # missing, outside the folder, or a special file
        return Loaded(path, name, error=f"{path}: refused: {e}")
    if finish_left_recording(real):
        sig = signature(real)  # the finisher compressed its traces: what loads has changed
    notes = [note] if (note := _FINISHED.get(str(real))) else []
    slot = st.empty()
    bar = _Bar(slot, name)
    with st.spinner(f"Loading {name} ..."):
        run, err = run_store().get_or_load(str(real), sig, bar)
    slot.empty()
    if run is None:
        return Loaded(real, name, error=err, notes=notes)
    return Loaded(real, name, run=run, notes=notes)


_FINISHED: dict[str, str] = {}  # run folder -> the line saying this server finished it


def finish_left_recording(path: Path) -> bool:
    """Finish a run folder its process left 'recording' (killed before its finisher ran), as
    `autoprof summary` does; True when it was finished now. The line saying so is kept for
    the run's pages. Anything wrong with the folder is the loader's to say."""
    if not (path.is_dir() and _says_recording(path)):
        return False
    from autoprof.record.finisher.folder import FinishError, finish_folder

    try:
        result = finish_folder(path, this_host_only=True)
    except (FinishError, OSError):
        return False
    if result is None:
        return False
    _FINISHED[str(path)] = (f"This run was left recording by a process that has ended; the "
                            f"viewer finished it: {result.status}.")
    find_runs.clear()  # the runs list shows its new status
    return True


def _says_recording(path: Path) -> bool:
    """Does the folder's manifest (or one rank's) still say 'recording'? Cheap, no lock."""
    for manifest in (path / runfolder.MANIFEST, *path.glob(runfolder.RANK_MANIFEST_GLOB)):
        try:
            record = runfolder.read_manifest(manifest, runfolder.MAX_MANIFEST_BYTES)
        except runfolder.ManifestError:
            continue
        if record.status == "recording":
            return True
    return False


_REPORTS: WeakKeyDictionary[Run, Report] = WeakKeyDictionary()


def summary(run: Run) -> Report:
    """The run's report (``Run.report()``: autoprof's summary cache beside its trace), once
    per loaded Run."""
    found = _REPORTS.get(run)
    if found is None:
        found = _REPORTS[run] = run.report()
    return found


def summaries(root: Path, paths: list[str],
              progress: Callable[[float, str], object]) -> dict[str, dict[str, Any]]:
    """Path -> the runs list's row (``report_row`` of the run's report, plus the problem size)
    for every run that loads; a run that does not gets its error line as the reason. Each run
    is loaded once per server and changed contents: the rows are kept by (path, signature),
    apart from the RunStore's few loaded runs, so a folder of hundreds of runs is not
    reloaded on every visit.
    """
    out: dict[str, dict[str, Any]] = {}
    for i, p in enumerate(paths):
        progress(i / max(len(paths), 1), f"Summarising run {i + 1} of {len(paths)}")
        try:
            real, sig = _resolve(root, Path(p))
        except (OSError, ValueError) as e:
            out[p] = {"verdict_reason": f"refused: {e}"}
            continue
        key = (str(real), sig)
        with _ROWS_LOCK:
            row = _ROWS.get(key)
        if row is None:
            row = _summary_row(key)
            with _ROWS_LOCK:
                _ROWS[key] = row
                while len(_ROWS) > _ROWS_MAX:
                    _ROWS.popitem(last=False)
        out[p] = row
    return out


_ROWS: OrderedDict[tuple[str, tuple[Any, ...]], dict[str, Any]] = OrderedDict()
_ROWS_LOCK = threading.Lock()
_ROWS_MAX = 10_000


def _summary_row(key: tuple[str, tuple[Any, ...]]) -> dict[str, Any]:
    from autoprof.analysis.metrics.problem_size import stated_size

    shown, err = run_store().get_or_load(key[0], key[1], None)
    if (answer := rank_by_rank(shown)) is not None:  # no summary: the reduce's answer instead
        return answer_row(answer)
    run = one_table(shown)
    if run is None:
        return {"verdict_reason": err}
    try:
        # the size the run states, blank for none: never the first op's dimension (a guess)
        return dict(report_row(summary(run)), size=stated_size(run.record, str(run.path)))
    except Exception as e:  # noqa: BLE001 - one run's failure must not hide the others;
        # its Overview shows the traceback
        return {"verdict_reason": f"analysis failed: {type(e).__name__}: {e}"}


@st.cache_resource(show_spinner=False)
def _upload_dir() -> Path:
    """One private (0700, fresh) temporary folder per server process for uploaded traces."""
    folder = tempfile.mkdtemp(prefix="autoprof-viewer-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Path(folder)


def upload_limit_bytes() -> int:
    """The most an upload may hold once decompressed: Streamlit's own upload limit."""
    return int(st.get_option("server.maxUploadSize")) * 1024**2


def inflated_size(data: bytes, limit: int) -> int | None:
    """Bytes `data` holds once gunzipped (itself when not gzip), or None past `limit`.

    Streams every gzip member without keeping the output: a small upload that inflates to
    gigabytes costs at most one block of memory.
    """
    if not data.startswith(b"\x1f\x8b"):
        return len(data) if len(data) <= limit else None
    total, rest = 0, data
    while rest[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(wbits=31)
        chunk = rest
        while True:
            piece = inflater.decompress(chunk, _BLOCK)
            total += len(piece)
            if total > limit:
                return None
            chunk = inflater.unconsumed_tail
            if inflater.eof or (not chunk and not piece):
                break
        if not inflater.eof:
            break  # truncated: the loader reports it
        rest = inflater.unused_data
    return total


def load_upload(name: str, data: bytes) -> Loaded:
    """Write an uploaded trace into a private temp folder, then load it (cached by content)."""
    limit = upload_limit_bytes()
    try:
        size = inflated_size(data, limit)
    except zlib.error as e:
        return Loaded(Path(name), name, error=f"{name}: corrupt gzip data ({e})")
    if size is None:
        return Loaded(Path(name), name, error=f"{name}: refused: more than {limit // 1024**2} MiB "
                      "once decompressed (the viewer's upload limit, server.maxUploadSize)")
    digest = hashlib.sha256(data).hexdigest()[:16]
    suffix = ".json.gz" if name.endswith(".gz") else ".json"
    sub = _upload_dir() / digest
    sub.mkdir(mode=0o700, exist_ok=True)
    target = sub / f"upload{suffix}"
    if not target.exists():
        runfolder.atomic_write_bytes(target, data, fsync=False)
    slot = st.empty()
    with st.spinner(f"Loading {name} ..."):
        run, err = run_store().get_or_load(str(target), signature(target), _Bar(slot, name))
    slot.empty()
    if run is None:
        return Loaded(target, name, error=err.replace(str(target), name))
    return Loaded(target, name, run=run)


@st.cache_data(ttl=5, show_spinner=False, max_entries=8)
def find_runs(root: str) -> tuple[pd.DataFrame | None, str]:
    """`autoprof.analysis.find_runs(root)` (cached 5 s), or the error it raised."""
    from autoprof.analysis import find_runs as discover

    try:
        df = discover(Path(root))
    except Exception as e:  # noqa: BLE001
        return None, _error_line(Path(root), e)
    return df, ""
