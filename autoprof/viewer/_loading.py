"""Loading, cached: one analysis call per (path, modification times); errors kept as text.

The viewer never parses a trace itself: it calls `autoprof.load` / `find_runs` / `compare`.
A run that fails to load yields its one-line error; other runs are unaffected.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from autoprof import runfolder
from autoprof.viewer._paths import OutsideFolderError, check_tree, inside, is_trace_name

Progress = Callable[..., None]


@dataclass
class Loaded:
    """The outcome of loading one run: the Run, or the error line."""

    path: Path
    label: str
    run: Any = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.run is not None


def signature(path: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime_ns, size) of a trace file, or of the traces and manifests in a folder.

    Other files (such as a cache the analysis writes beside a trace) do not count.
    """
    if not path.is_dir():
        s = path.stat()
        return ((path.name, s.st_mtime_ns, s.st_size),)
    items: list[tuple[str, int, int]] = []
    for entry in sorted(path.iterdir()):
        if not is_trace_name(entry.name):
            continue
        try:
            s = entry.stat()
        except OSError:
            continue
        items.append((entry.name, s.st_mtime_ns, s.st_size))
    return tuple(items)


def _analysis() -> Any:
    import autoprof.analysis as analysis

    return analysis


def _error_line(path: Path, exc: BaseException) -> str:
    try:
        trace_error = getattr(_analysis(), "TraceError", None)
    except ImportError:
        trace_error = None
    if trace_error is not None and isinstance(exc, trace_error):
        return str(exc)
    return f"{path}: {type(exc).__name__}: {exc}"


class RunStore:
    """Process-wide LRU of load outcomes keyed by (path, signature), shared by all sessions.

    Not a plain @st.cache_resource function because loading draws a progress bar, and
    Streamlit forbids cached functions from touching elements created outside them.
    """

    def __init__(self, max_entries: int = 32) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[tuple[str, tuple[Any, ...]], tuple[Any, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, tuple[Any, ...]], threading.Lock] = {}

    def get_or_load(self, path: str, sig: tuple[Any, ...],
                    progress: Progress | None) -> tuple[Any, str]:
        """(Run, "") or (None, error line); loads at most once per key, even concurrently."""
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

    def peek(self, path: str, sig: tuple[Any, ...]) -> tuple[Any, str] | None:
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


def _load(path: Path, progress: Progress | None) -> tuple[Any, str]:
    import autoprof

    try:
        return autoprof.load(path, progress=progress), ""
    except Exception as e:  # noqa: BLE001 - any failure is shown for this run only
        return None, _error_line(path, e)


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
    except (OSError, OutsideFolderError) as e:
        return Loaded(path, name, error=f"{path}: refused: {e}")
    slot = st.empty()
    bar = _Bar(slot, name)
    with st.spinner(f"Loading {name} ..."):
        run, err = run_store().get_or_load(str(real), sig, bar)
    slot.empty()
    if run is None:
        return Loaded(real, name, error=err)
    return Loaded(real, name, run=run)


def cached_run(root: Path, path: Path) -> Loaded | None:
    """The run if it is already loaded (same path and signature), else None; never loads."""
    try:
        real, sig = _resolve(root, path)
    except (OSError, OutsideFolderError):
        return None
    outcome = run_store().peek(str(real), sig)
    if outcome is None:
        return None
    return Loaded(real, path.name, run=outcome[0], error=outcome[1] or None)


@st.cache_resource(show_spinner=False)
def _upload_dir() -> Path:
    """One private (0700, fresh) temporary folder per server process for uploaded traces."""
    folder = tempfile.mkdtemp(prefix="autoprof-viewer-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Path(folder)


def load_upload(name: str, data: bytes) -> Loaded:
    """Write an uploaded trace into a private temp folder, then load it (cached by content)."""
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
    try:
        df = _analysis().find_runs(Path(root))
    except Exception as e:  # noqa: BLE001
        return None, _error_line(Path(root), e)
    return df, ""
