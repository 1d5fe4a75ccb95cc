"""Loading, cached: one analysis call per (path, modification times); errors kept as text.

The viewer never parses a trace itself: it calls `autoprof.load` / `find_runs` / `compare`.
A run that fails to load yields its one-line error; other runs are unaffected.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from viewer._paths import OutsideFolderError, check_tree, inside, is_trace_name

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


@st.cache_resource(max_entries=32, show_spinner=False)
def _load_cached(path: str, sig: tuple[Any, ...], _progress: Progress | None) -> tuple[Any, str]:
    """(Run, "") or (None, error line). Keyed by path and signature; `_progress` is not hashed."""
    import autoprof

    p = Path(path)
    try:
        return autoprof.load(p, progress=_progress), ""
    except Exception as e:  # noqa: BLE001 - any failure is shown for this run only
        return None, _error_line(p, e)


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


def load_run(root: Path, path: Path, label: str | None = None) -> Loaded:
    """Load a run folder or trace inside `root` (cached); never raises for bad input."""
    name = label or path.name
    try:
        real = inside(root, path)
        check_tree(root, real)
        sig = signature(real)
    except (OSError, OutsideFolderError) as e:
        return Loaded(path, name, error=f"{path}: refused: {e}")
    slot = st.empty()
    bar = _Bar(slot, name)
    with st.spinner(f"Loading {name} ..."):
        run, err = _load_cached(str(real), sig, bar)
    slot.empty()
    if run is None:
        return Loaded(real, name, error=err)
    return Loaded(real, name, run=run)


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
        tmp = sub / f".upload{suffix}.part"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    slot = st.empty()
    with st.spinner(f"Loading {name} ..."):
        run, err = _load_cached(str(target), signature(target), _Bar(slot, name))
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
