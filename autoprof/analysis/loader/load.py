"""``load_data(path) -> RunData``: a run folder, a trace or a folder of per-rank traces read into
one events table plus what the manifest and traces say (``autoprof.analysis.run`` wraps it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.loader import cache as _cache
from autoprof.analysis.loader import formats
from autoprof.analysis.loader.columns import KIND_X
from autoprof.analysis.loader.decode import TraceFile
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.events import build_events, empty_events
from autoprof.analysis.loader.inputs import Source, rank_from_name, resolve_source
from autoprof.analysis.loader.memory_events import build_memory, empty_memory
from autoprof.analysis.loader.merge import combine
from autoprof.analysis.loader.pages import small_pages
from autoprof.analysis.loader.remote import TracePath
from autoprof.runfolder import Manifest

Progress = Callable[[float, str], None]


@dataclass
class RunData:
    """What the loader read from one run: the events table and what the manifest and traces
    say about it. Plain data: the analysis of it is ``autoprof.analysis.Analysis``.

    ``record`` is the run's typed manifest (None: a plain trace); every reader asks its
    fields. ``manifest`` is its plain-dict view (``Manifest.to_dict()``), for callers that
    want JSON values. ``path`` and ``trace_paths`` are ``RemoteFile``s for a run read by URL."""

    path: TracePath
    events: pd.DataFrame
    name: str
    record: Manifest | None = None
    trace_paths: list[TracePath] = field(default_factory=list)
    trace_metadata: list[dict[str, Any]] = field(default_factory=list)
    world_size: int = 1
    load_warnings: list[str] = field(default_factory=list)
    memory_events: pd.DataFrame = field(default_factory=empty_memory)
    # ranks of ``world_size`` with no trace here (or named missing by the manifest)
    missing_ranks: tuple[int, ...] = ()

    @cached_property
    def manifest(self) -> dict[str, Any] | None:
        """The record as plain JSON values (``Manifest.to_dict()``); None without one."""
        return self.record.to_dict() if self.record is not None else None

    @property
    def is_cuda(self) -> bool:
        """True when the run has GPU activity, or its manifest or traces name a device."""
        if len(self.events) and (self.events["lane"] == "gpu").any():
            return True
        if self.record is not None and self.record.device:
            return True
        return any(m.get("deviceProperties") for m in self.trace_metadata)


def _load_one(trace: TracePath, progress: Progress | None) -> _cache.Cached:
    """One trace's table: from its cache beside it, else decoded (and cached). A trace read by
    URL gets no table cache: the cache is a memory-mapped file beside the trace, and a
    folder in an object store is neither mapped nor, as a rule, ours to write to."""
    notes: list[str] = []  # a cache that was ignored: said once, in this load's warnings
    cached = _cache.read_cache(trace, notes) if isinstance(trace, Path) else None
    if cached is not None:
        return cached
    trace_file = formats.read(trace, progress=progress)
    if progress is not None:
        progress(0.75, f"building the events table of {trace.name}")
    events = build_events(trace_file, rank=0, consume=True)  # its columns freed as used
    if not len(events):
        raise TraceError(trace, _no_events_problem(trace_file))
    distributed = trace_file.distributed_rank
    metadata = dict(trace_file.metadata)
    if distributed is not None:
        metadata["distributedInfo"] = {**metadata.get("distributedInfo", {}), "rank": distributed}
    memory = build_memory(trace_file.columns.memory, trace_file.warnings)
    result = _cache.Cached(events, metadata, list(trace_file.warnings), memory)
    if isinstance(trace, Path):
        if progress is not None:
            progress(0.9, f"caching {trace.name}")
        _cache.write_cache(trace, result)
    return replace(result, warnings=[*result.warnings, *notes]) if notes else result


def _no_events_problem(trace_file: TraceFile) -> str:
    """Why a trace gave no rows: empty, or events of other kinds (another tool's format?)."""
    columns = trace_file.columns
    total = len(columns)
    if total == 0:
        if trace_file.warnings:
            return "no usable events (" + "; ".join(trace_file.warnings) + ")"
        return "trace has no events ('traceEvents' is empty)"
    complete = int((columns.kind == KIND_X).sum())
    if complete:
        detail = "; ".join(trace_file.warnings) or "all were unusable"
        return f"none of its {complete} complete ('X') events is usable ({detail})"
    return (f"none of its {total} events is a complete ('X') event: not a torch.profiler "
            "trace? (torch.profiler writes ph='X' events)")


def _rank_of(trace: TracePath, metadata: dict[str, Any], source: Source) -> int:
    """distributedInfo.rank, else ``rank<R>`` in the file name, else the manifest, else 0."""
    info = metadata.get("distributedInfo")
    if isinstance(info, dict):
        rank = info.get("rank")
        if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
            return rank
    from_name = rank_from_name(trace)
    if from_name is not None:
        return from_name
    return source.manifest_rank.get(trace, 0)


def _world_size(source: Source, metadata: list[dict[str, Any]], ranks: set[int]) -> int:
    sizes = [len(ranks) or 1]
    if source.record is not None:
        sizes.append(source.record.world_size)
    for meta in metadata:
        info = meta.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("world_size"), int):
            sizes.append(info["world_size"])
    return max(sizes)


def _scaled(progress: Progress | None, index: int, count: int) -> Progress | None:
    if progress is None:
        return None
    outer = progress

    def report(fraction: float, message: str) -> None:
        outer((index + min(max(fraction, 0.0), 1.0)) / count, message)

    return report


def load_data(
    path: str | Path, progress: Progress | None = None, *, root: str | Path | None = None
) -> RunData:
    """Load a run folder, a trace file or a folder of per-rank traces into a RunData; a
    ``scheme://`` URL is read through fsspec (``remote.py``).

    ``progress(fraction, message)`` is called as big traces load. With ``root``, ``path`` and
    every trace must resolve inside ``root``. Bad input raises TraceError (one line).
    """
    with small_pages():  # numpy's temporaries on ordinary pages: pages.py
        return _load_data(path, progress, root)


def _load_data(path: str | Path, progress: Progress | None, root: str | Path | None
               ) -> RunData:
    source = resolve_source(path, root=root)
    frames: list[pd.DataFrame] = []
    memory: list[pd.DataFrame] = []
    metadata: list[dict[str, Any]] = []
    warnings = list(source.warnings)
    ranks: set[int] = set()
    count = len(source.traces)
    for index, trace in enumerate(source.traces):
        loaded = _load_one(trace, _scaled(progress, index, count))
        rank = _rank_of(trace, loaded.metadata, source)
        ranks.add(rank)
        events = loaded.events
        if len(events):
            events = events.assign(rank=np.full(len(events), rank, dtype=np.int64))
            frames.append(events)
        if loaded.memory is not None and len(loaded.memory):
            memory.append(loaded.memory.assign(rank=rank))
        metadata.append(loaded.metadata)
        prefix = f"{trace.name}: " if count > 1 else ""
        warnings.extend(prefix + w for w in loaded.warnings)
    events = combine(frames) if frames else empty_events()
    record = source.record
    if record is not None and record.status != "complete":
        warnings.append(f"run status is {record.status!r}" + (
            f" ({record.error.get('message')})" if record.error is not None else ""))
    world_size = _world_size(source, metadata, ranks)
    missing = _missing_ranks(record, ranks, world_size)
    if missing:
        warnings.append(f"rank(s) {', '.join(map(str, missing))} of {world_size} have no "
                        "trace here: the run is partial")
    name = record.name if record is not None and record.name else source.path.name
    if progress is not None:
        progress(1.0, "loaded")
    return RunData(
        source.path,
        events,
        name=name,
        record=record,
        trace_paths=list(source.traces),
        trace_metadata=metadata,
        world_size=world_size,
        load_warnings=warnings,
        memory_events=pd.concat(memory, ignore_index=True) if memory else empty_memory(),
        missing_ranks=missing,
    )


def _missing_ranks(record: Manifest | None, ranks: set[int], world_size: int
                   ) -> tuple[int, ...]:
    """The ranks of the world with no trace among those read, and any the manifest names
    missing (a folder of rank traces 0, 2, 5 of a world of 6: 1, 3, 4)."""
    named = set(record.missing_ranks or ()) if record is not None else set()
    absent = set(range(world_size)) - ranks if ranks else set()
    return tuple(sorted(named | absent))


__all__ = ["Progress", "RunData", "load_data"]
