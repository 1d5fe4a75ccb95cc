"""The cached columnar form of a loaded trace: ``<trace>.autoprof.arrow`` beside the trace.

An Arrow IPC file holding the events table, keyed by the trace's size, ``mtime_ns``,
``ctime_ns`` and inode, and by the code that built the table (``analysis/cache_key.py``: the
source files the writing process had imported, and their hash), all in the schema metadata
with the trace's top-level metadata, the load warnings and a SHA-256 of the tables'
content. A cache whose key does not match, whose code changed since, whose content does
not match its checksum (rows removed, reordered or garbled under the right key), or that
cannot be read, is ignored and rewritten; a folder
that cannot be written just means no cache. It is opened only when it is a regular file
(``runfolder.open_regular``: a link or a FIFO named like a cache is no cache, never waited
on). Writes go through ``runfolder.atomic_open`` (created exclusively, never through a link),
so a reader never sees half a cache.
The write runs on a background thread (``wait_for_writes`` waits for it): the load that
writes it already has its table.

Only traces of at least ``AUTOPROF_CACHE_MIN_BYTES`` (default 4 MiB, ~10k events) get a
cache: smaller ones decode in milliseconds, and caching them would only litter folders.
``AUTOPROF_CACHE=0`` turns caching off entirely.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc

from autoprof import env, runfolder
from autoprof.analysis.cache_key import code_key, code_key_valid
from autoprof.analysis.loader.memory_events import empty_memory, from_ipc, to_ipc

SUFFIX = ".autoprof.arrow"
_KEY = b"autoprof"
_MEMORY_KEY = b"autoprof.memory"  # the [memory] events table, Arrow IPC stream bytes


@dataclass
class Cached:
    """What a cache file holds besides the table."""

    events: pd.DataFrame
    metadata: dict[str, Any]
    warnings: list[str]
    memory: pd.DataFrame | None = None
    digest: str = ""  # what a read cache's checksum says (``_digest``); unused for a write


def cache_path(trace: Path) -> Path:
    return trace.with_name(trace.name + SUFFIX)


def _key(trace: Path) -> dict[str, Any] | None:
    """What a cache must match: the trace as it is now (the code that built the table is
    checked on its own: ``code_key_valid``).

    Size and mtime alone match another trace copied in with its times kept (``cp -p``,
    ``rsync -t``, an unpacked archive); the inode and ``ctime_ns``, which no copy keeps and
    nobody can set, tell that file from the one the cache was made from."""
    try:
        st = trace.stat()
    except OSError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino, "device": st.st_dev}


def _enabled() -> bool:
    return env.cache_enabled()


DEFAULT_MIN_BYTES = env.DEFAULT_CACHE_MIN_BYTES


def _min_bytes() -> int:
    return env.cache_min_bytes()


def read_cache(trace: Path, notes: list[str] | None = None) -> Cached | None:
    """The cached table if it exists and matches the trace as it is now, else None. A cache
    with the right key whose columns are not the table's (other names or dtypes: edited, or
    written by a build with other rules under the same version) is ignored too, and
    ``notes`` gets a line saying so (the load rebuilds it)."""
    if not _enabled():
        return None
    key = _key(trace)
    path = cache_path(trace)
    fd = runfolder.open_regular(path) if key is not None else None
    if key is None or fd is None:  # none, or not a regular file (a link, a FIFO: not waited on)
        return None
    try:
        # zero-copy: the columns stay views into the mapped file (split_blocks keeps pandas
        # from consolidating them into 2-D blocks, which would copy every numeric column);
        # their buffers keep the mapping alive, and it is unmapped when the last one goes
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        reader = ipc.open_file(pa.BufferReader(pa.py_buffer(mapped)))
        cached = _read_matching(reader, key)
        if cached is not None and _digest(cached.events, cached.memory) != cached.digest:
            raise CacheMismatch("its content does not match its checksum (edited or garbled)")
        return cached
    except CacheMismatch as exc:
        if notes is not None:
            notes.append(f"ignored the cache {path.name}: {exc}; rebuilt from the trace")
        return None
    except (OSError, pa.ArrowException, msgspec.DecodeError, KeyError, TypeError, ValueError):
        return None
    finally:
        os.close(fd)


def _read_matching(reader: ipc.RecordBatchFileReader, key: dict[str, Any]) -> Cached | None:
    """The cache's content when its key is ``key``, else None."""
    stored = reader.schema.metadata or {}
    meta = msgspec.json.decode(stored.get(_KEY, b"{}"))
    if not isinstance(meta, dict) or meta.get("key") != key:
        return None
    if not code_key_valid(meta.get("code")):
        return None
    events = reader.read_all().to_pandas(split_blocks=True)
    _check_columns(events, _expected_events())
    memory = stored.get(_MEMORY_KEY)
    memory_table = from_ipc(memory) if memory else None
    if memory_table is not None:
        _check_columns(memory_table, empty_memory())
    return Cached(events, dict(meta["metadata"]), list(meta["warnings"]), memory_table,
                  str(meta["content_sha256"]))


def _digest(events: pd.DataFrame, memory: pd.DataFrame | None) -> str:
    """SHA-256 of the tables' content: row count, column names, every value in row order
    (a categorical column by its codes and its categories)."""
    digest = hashlib.sha256()
    for table in (events, memory if memory is not None and len(memory) else None):
        if table is None:
            continue
        digest.update(f"{len(table)}\0".encode())
        for name in table.columns:
            _add_column(digest, str(name), table[name])
    return digest.hexdigest()


def _add_column(digest: Any, name: str, column: pd.Series) -> None:
    digest.update(name.encode() + b"\0")
    if isinstance(column.dtype, pd.CategoricalDtype):
        digest.update("\0".join(map(str, column.cat.categories)).encode("utf-8", "replace"))
        values = column.cat.codes.to_numpy()
    else:
        values = column.to_numpy()
    array = np.ascontiguousarray(values)
    digest.update(array.dtype.str.encode())
    digest.update(array.view(np.uint8).data if array.size else b"")


class CacheMismatch(ValueError):
    """A cache file whose table is not the one this code builds (names or dtypes)."""


def _expected_events() -> pd.DataFrame:
    from autoprof.analysis.loader.events import empty_events

    return empty_events()


def _check_columns(table: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Raise CacheMismatch unless ``table`` has ``expected``'s columns, in order, each of
    its dtype (a text column any categorical)."""
    if tuple(table.columns) != tuple(expected.columns):
        raise CacheMismatch("it holds other columns")
    for name, want in expected.dtypes.items():
        got = table[name].dtype
        same_kind = isinstance(want, pd.CategoricalDtype) and isinstance(got,
                                                                         pd.CategoricalDtype)
        if not same_kind and got != want:
            raise CacheMismatch(f"column {name} holds {got}, not {want}")


_pending_lock = threading.Lock()
_pending: list[threading.Thread] = []


def write_cache(trace: Path, cached: Cached) -> bool:
    """Start writing the cache, atomically, on a background thread (the caller has its table
    already; the second open is the one that needs the file). Returns False when no cache
    is due (disabled, small trace); a folder that is not writable just means no cache.
    The thread is not a daemon: the interpreter finishes the file before it exits."""
    if not _enabled():
        return False
    key = _key(trace)
    if key is None or key["size"] < _min_bytes():
        return False
    meta = {
        "key": key,
        "code": code_key(),
        "metadata": cached.metadata,
        "warnings": cached.warnings,
    }
    memory = cached.memory if cached.memory is not None and len(cached.memory) else None
    args = (cache_path(trace), meta, cached.events, memory)
    # at interpreter exit (autoprof's own atexit export) a thread started now would not be
    # waited for, or cannot start at all: then the file is written here and now
    if threading.main_thread().is_alive():
        thread = threading.Thread(target=_write_table, args=args,
                                  name="autoprof-cache-writer", daemon=False)
        try:
            thread.start()
        except RuntimeError:  # "can't create new thread at interpreter shutdown"
            pass
        else:
            with _pending_lock:
                _pending[:] = [t for t in _pending if t.is_alive()]
                _pending.append(thread)
            return True
    _write_table(*args)
    return True


def wait_for_writes(timeout_s: float | None = None) -> None:
    """Block until every cache write started so far has finished (tests, benchmarks)."""
    with _pending_lock:
        pending = list(_pending)
    for thread in pending:
        thread.join(timeout_s)


def _write_table(target: Path, meta: dict[str, Any], events: pd.DataFrame,
                 memory: pd.DataFrame | None) -> None:
    """The tables as Arrow (the events zero-copy: Arrow arrays over the frame's buffers),
    checksummed (``_digest``) and written through ``runfolder.atomic_open`` (created
    exclusively, never through a link, never over what is not a regular file). All of it
    on the writer thread: the loading thread goes on to its summary meanwhile."""
    try:
        table = pa.Table.from_pandas(events, preserve_index=False)
        stored = {_MEMORY_KEY: to_ipc(memory)} if memory is not None else {}
        meta = {**meta, "content_sha256": _digest(events, memory)}
        table = table.replace_schema_metadata({**stored, _KEY: msgspec.json.encode(meta)})
        with runfolder.atomic_open(target, fsync=False) as sink, ipc.new_file(
            sink, table.schema
        ) as writer:
            writer.write_table(table)
    except Exception:  # no cache is the only consequence: never a traceback on a thread
        pass
