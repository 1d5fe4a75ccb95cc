"""Which trace files an fsspec URL means: the rules of ``inputs.py`` (a trace, a run folder
with its manifests, a folder of per-rank traces; a folder of runs refused), read through
``loader/remote.py``. An object store has no symlinks, so the only escape to refuse is a
manifest naming ``../x`` or an absolute path (``inputs.listed_traces``), and with ``root``
every trace's URL must start with the root's.
"""

from __future__ import annotations

from autoprof.analysis.loader import remote
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.inputs import (
    MAX_TRACES,
    Source,
    may_be_trace_name,
    run_source,
)
from autoprof.analysis.loader.manifest import MANIFEST_NAME, MAX_MANIFEST_BYTES, record_from_bytes
from autoprof.analysis.loader.remote import RemoteFile, TracePath
from autoprof.runfolder import Manifest

Entries = list[tuple[RemoteFile, bool]]  # a folder's children, each with "is a folder"


def read_remote_record(target: RemoteFile) -> Manifest:
    """The typed manifest at ``target``; TraceError naming the URL when unusable."""
    return record_from_bytes(target, remote.read_small(target, MAX_MANIFEST_BYTES, "manifest"))


def _exists(target: RemoteFile, entries: Entries) -> bool:
    if any(child == target and not is_dir for child, is_dir in entries):
        return True
    try:
        return remote.info(target).get("type") != "directory"
    except TraceError:
        return False


def _run_source(run_dir: RemoteFile, entries: Entries) -> Source:
    return run_source(run_dir, run_dir / MANIFEST_NAME, entries, read_remote_record,
                      lambda trace: _exists(trace, entries))


def _folder_source(folder: RemoteFile, entries: Entries) -> Source:
    traces: list[TracePath] = [c for c, is_dir in entries
                               if not is_dir and may_be_trace_name(c.name)]
    if traces:
        if len(traces) > MAX_TRACES:
            raise TraceError(folder, f"{len(traces)} trace files: more than {MAX_TRACES}")
        return Source(folder, "trace-folder", traces)
    runs = [c for c, is_dir in entries if is_dir and _exists(c / MANIFEST_NAME, [])]
    if runs:
        newest = max(runs, key=lambda r: (r.name, r.url))
        raise TraceError(folder, f"a folder of {len(runs)} runs, not one run: pass one run "
                                 f"folder, e.g. {newest}")
    raise TraceError(folder, "no trace files (*.json, *.json.gz) and no manifest.json here")


def _rank_from_run(trace: RemoteFile) -> dict[TracePath, int]:
    """A lone trace inside a run folder: the rank its manifests give it (if they can say)."""
    try:
        entries = remote.listing(trace.parent)
        if not any(c.name == MANIFEST_NAME for c, is_dir in entries if not is_dir):
            return {}
        source = _run_source(trace.parent, entries)
    except TraceError:
        return {}
    ranks = [rank for t, rank in source.manifest_rank.items() if t.name == trace.name]
    return {trace: ranks[0]} if ranks else {}


def _check_root(source: Source, root: str | None) -> Source:
    if root is None:
        return source
    prefix = root.rstrip("/") + "/"
    for item in [source.path, *source.traces]:
        if not str(item).startswith(prefix) and str(item) != root.rstrip("/"):
            raise TraceError(item, f"lies outside the traces root {root}")
    return source


def resolve_remote(url: str, root: str | None = None) -> Source:
    """What the URL means (``inputs.resolve_source``'s rules); TraceError for a URL that is
    missing, unreadable, no run and no trace, or without fsspec installed."""
    target = RemoteFile(url.rstrip("/") if not url.endswith("://") else url)
    if remote.info(target).get("type") != "directory":
        if target.name == MANIFEST_NAME:
            return _check_root(_run_source(target.parent, remote.listing(target.parent)), root)
        source = Source(target, "trace", [target], manifest_rank=_rank_from_run(target))
        return _check_root(source, root)
    entries = remote.listing(target)
    if any(c.name == MANIFEST_NAME for c, is_dir in entries if not is_dir):
        return _check_root(_run_source(target, entries), root)
    return _check_root(_folder_source(target, entries), root)


__all__ = ["read_remote_record", "resolve_remote"]
