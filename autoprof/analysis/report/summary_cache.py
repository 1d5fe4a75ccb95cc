"""The summary of a run, cached beside its first trace: ``<trace>.autoprof.summary.json``.

``Run.summary()`` reads it when its key matches, else computes ``summarize(run)`` and writes
it. The key is what the summary depends on: every trace as it is now (the loader cache's own
key, ``_cache._key``: size, ``mtime_ns``, ``ctime_ns``, inode) and, by the same key, the run
folder's source-lines traces (``lines.<worker>.json.gz``), the code that computed it
(``analysis/cache_key.py``: the source files the process had imported, and their hash, so a
change to a metric, a check or the report the summary ran invalidates it without a
hand-bumped version), the run's path, name
and world size, its manifest (a SHA-256 of its canonical JSON: a manifest rewritten with a new
status counts), and a
fingerprint of the events table (row count, columns, sums of ``ts_us`` and ``dur_us``), so a
Run whose events were filtered or replaced after loading is never answered from the cache.
The file also holds a SHA-256 of the summary itself: an entry edited or garbled after it was
written is ignored.

A run read by URL (``loader/remote.py``) gets no summary cache: its folder is not this
machine's to write to (the per-rank results of ``scale/`` have a local cache for that).

Same rules as the loader's cache: only runs whose traces total at least
``AUTOPROF_CACHE_MIN_BYTES`` get one, ``AUTOPROF_CACHE=0`` turns it off, writes go through
``runfolder.atomic_write_text`` (created exclusively, never through a link, never over
something that is not a regular file), it is read only when it is a regular file
(``runfolder.read_regular``: a link or a FIFO named like it is no cache, and is never waited
on), and a cache that is stale, unreadable or malformed is ignored (and rewritten where it
can be). Nothing here ever makes ``summary()`` fail.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from autoprof import runfolder
from autoprof.analysis.cache_key import code_key, code_key_valid
from autoprof.analysis.loader import cache as _cache
from autoprof.analysis.loader.phase import phase
from autoprof.analysis.loader.remote import RemoteFile
from autoprof.analysis.metrics.lines.trace import lines_files_of

if TYPE_CHECKING:  # the analysis modules load only when the summary must be computed
    from autoprof.analysis.analysis import RunLike

SUFFIX = ".autoprof.summary.json"
MAX_CACHE_BYTES = 64 * 1024**2  # a larger file named like a cache is not one of ours


def summary_path(trace: Path) -> Path:
    return trace.with_name(trace.name + SUFFIX)


def _traces(run: RunLike) -> list[Path]:
    return [Path(p) for p in run.trace_paths if not isinstance(p, RemoteFile)]


def _events_fingerprint(run: RunLike) -> list[Any]:
    events = run.events
    sums = [repr(float(np.sum(events[c].to_numpy(dtype=float))))
            for c in ("ts_us", "dur_us") if c in events.columns]
    return [len(events), [str(c) for c in events.columns], sums]


def summary_key(run: RunLike) -> dict[str, Any] | None:
    """What a cached summary must match, or None when the run cannot be cached."""
    traces = _traces(run)
    if not traces or isinstance(run.path, RemoteFile) or len(traces) < len(run.trace_paths):
        return None
    keys = [_cache._key(t) for t in traces]
    # what the summary's source lines read
    lines = sorted(lines_files_of(Path(str(run.path))).values())
    lines_keys = [_cache._key(p) for p in lines]
    if any(k is None for k in keys + lines_keys):
        return None
    manifest = run.manifest
    manifest_text = json.dumps(manifest, sort_keys=True, default=str)
    return {
        "traces": [[str(t), k] for t, k in zip(traces, keys, strict=True)],
        "lines": [[str(p), k] for p, k in zip(lines, lines_keys, strict=True)],
        "path": str(run.path),
        "name": run.name,
        "world_size": run.world_size,
        "manifest_sha256": hashlib.sha256(manifest_text.encode()).hexdigest(),
        "events": _events_fingerprint(run),
    }


def read_summary(run: RunLike, key: dict[str, Any]) -> dict[str, Any] | None:
    """The cached summary if its key equals ``key`` and its SHA-256 matches, else None
    (never raises, never blocks)."""
    data = runfolder.read_regular(summary_path(_traces(run)[0]), MAX_CACHE_BYTES)
    if data is None:  # none, or not a regular file of ours (a link, a FIFO: never waited on)
        return None
    try:
        stored = json.loads(data)
        if not isinstance(stored, dict) or stored.get("key") != key:
            return None
        if not code_key_valid(stored.get("code")):
            return None
        summary = stored.get("summary")
        if not isinstance(summary, dict) or stored.get("summary_sha256") != _digest(summary):
            return None
        return summary
    except (OSError, ValueError, TypeError, RecursionError):
        return None


def write_summary(run: RunLike, key: dict[str, Any], summary: dict[str, Any]) -> bool:
    """Write the cache atomically; False (silently) when it cannot be written."""
    target = summary_path(_traces(run)[0])
    try:
        text = json.dumps({"key": key, "code": code_key(), "summary": summary,
                           "summary_sha256": _digest(summary)}, allow_nan=False)
        runfolder.atomic_write_text(target, text, fsync=False)
        return True
    except (OSError, ValueError, TypeError, RecursionError):
        return False


def _digest(summary: dict[str, Any]) -> str:
    text = json.dumps(summary, sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _cacheable(key: dict[str, Any] | None) -> bool:
    if key is None or not _cache._enabled():
        return False
    total_bytes = sum(int(k["size"]) for _, k in key["traces"])
    return total_bytes >= _cache._min_bytes()


def cached_summary(run: RunLike) -> dict[str, Any]:
    """The JSON of ``summarize(run)``, from the cache beside the run's first trace when it
    matches. A run analysed with options other than the defaults (``Run.options``) is never
    cached."""
    if _has_options(run):
        return _summarize(run)
    try:
        key = summary_key(run)
    except (OSError, ValueError, TypeError, KeyError):
        key = None
    if key is None or not _cacheable(key):
        return _summarize(run)
    cached = read_summary(run, key)
    if cached is not None:
        return cached
    summary = _summarize(run)
    phase("writing the summary cache")
    write_summary(run, key, summary)
    return summary


def _has_options(run: RunLike) -> bool:
    from autoprof.analysis.analysis import AnalysisOptions

    options = getattr(run, "options", None)
    return isinstance(options, AnalysisOptions) and options != AnalysisOptions()


def _summarize(run: RunLike) -> dict[str, Any]:
    """The report's JSON (``summarize(run).to_dict()``): what the cache stores."""
    # imported here: a cache hit does not load the analysis modules at all
    from autoprof.analysis.report.summary import summarize

    return summarize(run).to_dict()
