"""The map: one rank's trace -> its ``RankResult``, analysed on its own, cached beside it.

``analyse_rank(task)`` loads only that rank's trace (``autoprof.analysis.load_data``: the
rank comes from the trace's ``distributedInfo``, its name or the run's manifests, as in a
whole-run load), gives it the run's manifest (the call region and the profiler caveat come
from there) and runs the same metrics a whole-run summary runs per rank: the rank table's
row (``rank_table`` over a one-rank table is the whole-run table's row of that rank: every
column of it is computed from that rank's rows alone), the breakdown, the verdict, the top
ops, the memory peaks and the step times. Its memory is one rank's table, whatever the
number of ranks.

The result is written beside the trace as ``<trace>.autoprof.rank`` (JSON; a name no trace
reader takes), keyed by the trace as it is now (size, ``mtime_ns``, ``ctime_ns``, inode), the
run's manifest and world size, and the code the map ran (``analysis/cache_key.py``: the package's
source files the process had imported when the result was computed, and their hash; an edit
to any other file keeps the cache), so a second open reads a few kilobytes per rank. The
result is stored as its JSON text beside that text's SHA-256: a key that differs, a result
edited, cut or garbled after it was written, or a file that does not read (a link, a FIFO:
``runfolder.read_regular``) means recompute, never a traceback. The write goes through
``runfolder.atomic_write_text`` (created exclusively under an unguessable name, never
through a link, never over something that is not a regular file); an unwritable folder just
means no cache.

A trace read by URL (``s3://``, ``gs://``, ``memory://``: ``loader/remote.py``) gets its
result cached on this machine instead, under ``AUTOPROF_CACHE_DIR`` (default
``~/.cache/autoprof``) in ``ranks/<SHA-256 of the URL>.autoprof.rank``, keyed by the URL,
the size and whatever version tag the store reports (ETag, mtime, generation) in place of
the inode and times: nothing is written beside a remote trace, and a new object at the same
URL has a new tag.

``analyse_rank`` is a module-level function of one picklable argument, so any
``concurrent.futures.Executor`` runs it: a local process pool, Dask's, Ray's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoprof import env, runfolder
from autoprof.analysis.cache_key import code_key, code_key_valid
from autoprof.analysis.loader import remote
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.scale.result import FORMAT_VERSION, RankResult
from autoprof.runfolder import Manifest

SUFFIX = ".autoprof.rank"
MAX_CACHE_BYTES = 64 * 1024**2  # a larger file named like a cache is not one of ours


@dataclass(frozen=True)
class RankTask:
    """What the map needs to analyse one trace of a run (picklable, small)."""

    trace: str
    record: Manifest | None  # the run's manifest
    world_size: int
    use_cache: bool = True


def cache_path(trace: str | Path) -> Path:
    """Beside a local trace; for a URL, in this machine's cache folder (module doc)."""
    if remote.is_url(trace):
        digest = hashlib.sha256(str(trace).encode()).hexdigest()
        return env.cache_dir() / "ranks" / (digest + SUFFIX)
    trace = Path(trace)
    return trace.with_name(trace.name + SUFFIX)


def _trace_key(trace: str) -> dict[str, Any] | None:
    """The trace as it is now: stat for a local file, the store's version tag for a URL."""
    if remote.is_url(trace):
        try:
            return remote.version_tag(remote.RemoteFile(trace))
        except TraceError:
            return None
    try:
        st = Path(trace).stat()
    except OSError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino}


def cache_key(task: RankTask) -> dict[str, Any] | None:
    """What a cached result must match, or None when the trace cannot be read."""
    trace_key = _trace_key(task.trace)
    if trace_key is None:
        return None
    view = task.record.to_dict() if task.record is not None else None
    manifest = json.dumps(view, sort_keys=True, default=str)
    return {**trace_key, "format": FORMAT_VERSION, "world_size": task.world_size,
            "manifest": hashlib.sha256(manifest.encode()).hexdigest()}


def read_cached(task: RankTask) -> RankResult | None:
    """The cached result of ``task`` when its key matches the trace as it is now and the
    result is whole (its SHA-256 matches and it reads as a RankResult); else None, and the
    rank is recomputed. Never raises, never blocks (``runfolder.read_regular``)."""
    key = cache_key(task) if task.use_cache else None
    if key is None:
        return None
    data = runfolder.read_regular(cache_path(task.trace), MAX_CACHE_BYTES)
    try:
        raw = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or raw.get("key") != key or not code_key_valid(raw.get("code")):
        return None
    text = raw.get("result")
    if not isinstance(text, str) or raw.get("result_sha256") != _sha256(text):
        return None
    return RankResult.from_json(text)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def write_cached(task: RankTask, result: RankResult) -> bool:
    """Write ``result`` beside its trace (``runfolder.atomic_write_text``: created
    exclusively, never through a link); False when it cannot be written."""
    key = cache_key(task)
    if key is None or not task.use_cache:
        return False
    target = cache_path(task.trace)
    result_text = result.to_json()
    text = json.dumps({"key": key, "code": code_key(), "result": result_text,
                       "result_sha256": _sha256(result_text)})
    try:
        if remote.is_url(task.trace):
            target.parent.mkdir(parents=True, exist_ok=True)
        runfolder.atomic_write_text(target, text, fsync=False)
    except OSError:
        return False
    return True


def analyse_rank(task: RankTask) -> RankResult:
    """The rank's result: from its cache when that matches, else computed and cached."""
    cached = read_cached(task)
    if cached is not None:
        return cached
    result = compute_rank(task)
    write_cached(task, result)
    return result


def compute_rank(task: RankTask) -> RankResult:
    """Load the one trace and analyse it on its own (see the module doc)."""
    from autoprof.analysis import Analysis, load_data
    from autoprof.analysis.loader.helper import no_helper
    from autoprof.analysis.report.summary import jsonable, memory_summary, top_ops

    with no_helper():  # the map runs its ranks in parallel already
        data = load_data(task.trace)
    data = dataclasses.replace(data, record=task.record,
                               world_size=max(task.world_size, data.world_size))
    analysis = Analysis(data)
    table = analysis.ranks
    row = jsonable(table.to_dict(orient="records")[0]) if len(table) else {}
    mean = dict(analysis.breakdown.mean())
    per_step: list[dict[str, Any]] = mean.pop("per_step", [])  # type: ignore[assignment]
    memory = memory_summary(analysis.memory)
    spans = analysis.steps["cpu_span_us"] if len(analysis.steps) else []
    verdict = analysis.verdict
    rank = int(row["rank"]) if row else int(data.events["rank"].iloc[0]) if len(data.events) else 0
    return RankResult(
        rank=rank, trace=str(task.trace), events=len(data.events), row=row,
        breakdown=jsonable(mean), verdict=str(verdict.kind), verdict_reason=str(verdict.reason),
        top_ops=top_ops(analysis.ops), memory_peaks=memory["devices"] if memory else None,
        step_times_us=[float(s) for s in spans], world_size=data.world_size,
        warnings=list(data.load_warnings), steps=[int(s["step"]) for s in per_step],
        step_us=[float(s["step_us"]) for s in per_step],
    )
