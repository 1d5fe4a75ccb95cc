"""Which trace files a path means, and which rank each belongs to.

A path is one of: a trace file (``.json`` / ``.json.gz``); a run folder (``manifest.json``
plus traces, and ``rank<R>.manifest.json`` per rank under torch.distributed); a folder of
per-rank traces (as HTA reads them). A folder of run folders is refused with a message that
names the newest run. Every trace must resolve inside the folder it was found in (and inside
``root`` when one is given): a symlink that escapes is refused. An fsspec URL
(``remote_inputs.py``) means the same things, read where it lies.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import TypeVar

from autoprof.analysis.loader import formats
from autoprof.analysis.loader.cache import SUFFIX as CACHE_SUFFIX
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.manifest import MANIFEST_NAME, read_record
from autoprof.analysis.loader.remote import RemoteFile, TracePath, is_url, local_path_of
from autoprof.analysis.loader.source import refuse_special
from autoprof.runfolder import Manifest, confine, lines_name, rank_of_manifest
from autoprof.runfolder.whatif import WHATIF_NAME

_RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[_-]?(\d{1,6})(?=[^0-9]|$)", re.IGNORECASE)
MAX_TRACES = 4096
_Where = TypeVar("_Where", Path, RemoteFile)  # a local folder or one named by URL


@dataclass
class Source:
    """A resolved input: trace files with the rank a manifest gives each (if any)."""

    path: TracePath
    kind: str  # "trace" | "run" | "trace-folder"
    traces: list[TracePath]
    manifest_rank: dict[TracePath, int] = field(default_factory=dict)
    record: Manifest | None = None  # the run's manifest.json
    rank_manifests: dict[int, Manifest] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def may_be_trace_name(name: str) -> bool:
    """Whether a file of this name may hold a trace (a name some ``formats`` reader takes; not
    a manifest, what-if result, cache, temporary or hidden file). Names only:
    ``discover.looks_like_trace`` reads the first bytes."""
    lower = name.lower()
    if lower.endswith(CACHE_SUFFIX) or lower.endswith(".tmp") or lower.startswith("."):
        return False
    if lower in (MANIFEST_NAME, WHATIF_NAME) or lower.endswith(".manifest.json"):
        return False
    return formats.can_read(Path(name))


def rank_from_name(path: TracePath) -> int | None:
    """``rank3.123.pt.trace.json.gz`` -> 3 (the worker name autoprof writes under DDP)."""
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


inside = confine.is_inside  # the one rule (runfolder.confine): resolved, inside the folder


def _check_inside(path: Path, folder: Path, what: str) -> None:
    try:
        confine.resolve_inside(path, folder, what)
    except confine.ReadRefused as refused:
        raise TraceError(path, refused.problem) from None


def listed_traces(run_dir: _Where, record: Manifest, manifest_path: TracePath
                  ) -> list[_Where]:
    """The traces a manifest's ``files`` lists (none outside the run folder)."""
    out: list[_Where] = []
    for name in record.files or ():
        candidate = run_dir / name
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise TraceError(manifest_path, f"lists a file outside the run folder: {name!r}")
        # a source-lines trace (record.lines) is listed beside the traces but is no cycle
        if may_be_trace_name(candidate.name) and not fnmatch(candidate.name, lines_name("*")):
            out.append(candidate)
    return out


def _run_source(run_dir: Path) -> Source:
    def present(trace: Path) -> bool:
        if not trace.exists():
            return False
        _check_inside(trace, run_dir, "the run folder")
        return True

    entries = [(child, not child.is_file()) for child in sorted(run_dir.iterdir())]
    return run_source(run_dir, run_dir / MANIFEST_NAME, entries, read_record, present)


def run_source(run_dir: _Where, manifest_path: _Where, entries: Sequence[tuple[_Where, bool]],
               read: Callable[[_Where], Manifest], present: Callable[[_Where], bool]
               ) -> Source:
    """A run folder's traces, local or by URL: those its manifests list that are
    ``present`` (each missing one a warning), with their ranks (``listed_by_rank``)."""
    record = read(manifest_path)
    source = Source(run_dir, "run", [], record=record)
    for trace, rank in listed_by_rank(run_dir, record, manifest_path, entries, read,
                                      source).items():
        if not present(trace):
            source.warnings.append(f"{trace.name}: listed in the manifest but missing")
            continue
        source.traces.append(trace)
        if rank is not None:
            source.manifest_rank[trace] = rank
    if not source.traces:
        raise TraceError(run_dir, f"run folder has no trace ({no_trace_detail(record)})")
    return source


def listed_by_rank(run_dir: _Where, record: Manifest, manifest_path: TracePath,
                   entries: Sequence[tuple[_Where, bool]],
                   read: Callable[[_Where], Manifest], source: Source
                   ) -> dict[_Where, int | None]:
    """Each trace the run's manifests list, with the rank whose manifest lists it (None: not
    known); the rank manifests (read by ``read``) go into ``source.rank_manifests``.
    ``entries``: the run folder's children, each with "is a folder", in name order."""
    listed: dict[_Where, int | None] = {}
    for trace in listed_traces(run_dir, record, manifest_path):
        listed[trace] = record.rank
    for child, is_dir in entries:
        rank_number = rank_of_manifest(child.name)
        if rank_number is None or is_dir:
            continue
        rank_manifest = read(child)
        source.rank_manifests[rank_number] = rank_manifest
        for trace in listed_traces(run_dir, rank_manifest, child):
            listed[trace] = rank_number
    if record.files is None:  # old manifests: find the traces by name
        for child, is_dir in entries:
            if not is_dir and may_be_trace_name(child.name):
                listed.setdefault(child, None)
    return listed


def no_trace_detail(record: Manifest) -> str:
    error = record.error
    detail = f"status {record.status!r}"
    if error is not None and error.get("message"):
        detail += f", error: {error.get('type', 'Error')}: {error['message']}"
    return detail


def _folder_source(folder: Path) -> Source:
    children = sorted(folder.iterdir())
    traces = [c for c in children if c.is_file() and may_be_trace_name(c.name)]
    if traces:
        if len(traces) > MAX_TRACES:
            raise TraceError(folder, f"{len(traces)} trace files: more than {MAX_TRACES}")
        for trace in traces:
            _check_inside(trace, folder, "the traces folder")
        return Source(folder, "trace-folder", list[TracePath](traces))
    runs = [c for c in children if c.is_dir() and (c / MANIFEST_NAME).is_file()]
    nested = [c for c in children if c.is_dir() and not (c / MANIFEST_NAME).is_file()]
    runs += [g for c in nested for g in sorted(c.iterdir())
             if g.is_dir() and (g / MANIFEST_NAME).is_file()]
    if runs:
        newest = max(runs, key=lambda r: (r.name, str(r)))
        raise TraceError(
            folder,
            f"a folder of {len(runs)} runs, not one run: pass one run folder, e.g. {newest} "
            "(autoprof.analysis.find_runs lists them)",
        )
    raise TraceError(folder, "no trace files (*.json, *.json.gz) and no manifest.json here")


def _rank_from_run(trace: Path) -> dict[TracePath, int]:
    """A lone trace inside a run folder: the rank its manifests give it (if they can say)."""
    if not (trace.parent / MANIFEST_NAME).is_file():
        return {}
    try:
        source = _run_source(trace.parent)
    except TraceError:
        return {}
    ranks = [rank for t, rank in source.manifest_rank.items() if t.name == trace.name]
    return {trace: ranks[0]} if ranks else {}


def resolve_source(path: str | Path, root: str | Path | None = None) -> Source:
    """What ``path`` means; raises TraceError for a missing, empty or escaping input. A URL
    (``scheme://...``) is resolved through fsspec (``remote_inputs.resolve_remote``), except
    a ``file://`` URL: this machine's files are read by path, under the same rules."""
    path = local_path_of(path)
    root = None if root is None else local_path_of(root)
    if is_url(path) or is_url(root):
        from autoprof.analysis.loader.remote_inputs import resolve_remote

        return resolve_remote(str(path), None if root is None else str(root))
    path = Path(path)
    if root is not None:
        _check_inside(path, Path(root), "the traces root")
    if not path.exists():
        raise TraceError(path, "no such file or folder")
    if not path.is_file() and not path.is_dir():
        refuse_special(path, path.stat().st_mode)  # before anything opens it
    if path.is_file():
        if path.name == MANIFEST_NAME:
            return _run_source(path.parent)
        return Source(path, "trace", [path], manifest_rank=_rank_from_run(path))
    if (path / MANIFEST_NAME).exists():
        source = _run_source(path)
    else:
        source = _folder_source(path)
    if root is not None:
        _check_traces_inside(source, Path(root))
    return source


def _check_traces_inside(source: Source, root: Path) -> None:
    for trace in source.traces:
        if isinstance(trace, Path):  # a local source holds only local paths
            _check_inside(trace, root, "the traces root")
