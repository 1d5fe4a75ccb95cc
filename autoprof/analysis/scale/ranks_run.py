"""``summarize_ranks(path)``: a many-rank run analysed as a map over its ranks and a reduce.

The path means what it means to ``autoprof.load`` (a run folder, a folder of per-rank
traces, one trace). Each trace is one task of the map (``rank_map.analyse_rank``); tasks
whose result is cached beside their trace are read in this process and never submitted. The
rest run on a ``concurrent.futures.Executor``: the one given (Dask's
``distributed.Client(address).get_executor()``, Ray's, a thread pool), else a local process
pool of ``jobs`` workers (``jobs=1``: in this process, no pool). The parent process holds only
the small per-rank results, so its memory does not grow with the ranks' events; each worker
holds one rank's table at a time.

The path may be an fsspec URL (``loader/remote.py``): each worker streams its rank's trace
from the store, and the per-rank results are cached on this machine (``rank_map``).

Per-rank caches follow the loader's rules: ``AUTOPROF_CACHE=0`` turns them off, and a run
whose traces total less than ``AUTOPROF_CACHE_MIN_BYTES`` (4 MiB by default) gets none (small
runs recompute in less time than reading a cache saves, and fixture folders stay clean).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from autoprof import env
from autoprof.analysis.loader import remote
from autoprof.analysis.loader.remote import RemoteFile, TracePath
from autoprof.analysis.scale.rank_map import RankTask, analyse_rank, read_cached
from autoprof.analysis.scale.reduce import RunAnswer, reduce_ranks
from autoprof.analysis.scale.result import RankResult

if TYPE_CHECKING:
    from autoprof.analysis.loader.inputs import Source

Progress = Callable[[int, int], None]  # (ranks done, ranks in all)


def rank_tasks(path: str | Path, use_cache: bool | None = None) -> list[RankTask]:
    """One task per trace of the run at ``path`` (TraceError for a path that is no run)."""
    return _source_tasks(path, use_cache)[1]


def _source_tasks(path: str | Path, use_cache: bool | None
                  ) -> tuple[Source, list[RankTask]]:
    """The run at ``path`` as the loader resolves it, and one task per trace."""
    from autoprof.analysis.loader.inputs import resolve_source

    source = resolve_source(path)
    record = source.record
    world_size = max(record.world_size if record is not None else 1, len(source.traces))
    if use_cache is None:
        total = sum(_size_bytes(t) for t in source.traces)
        use_cache = env.cache_enabled() and total >= env.cache_min_bytes()
    return source, [RankTask(str(t), record, world_size, use_cache) for t in source.traces]


def _size_bytes(trace: TracePath) -> int:
    if isinstance(trace, RemoteFile):
        return int(remote.info(trace).get("size") or 0)
    return trace.stat().st_size


def local_workers(jobs: int, ranks: int) -> int:
    """The local processes ``--jobs N`` starts: never more than the ranks left to analyse
    nor the cores this process may use (``--jobs 100000`` on one rank: one, in-process)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(jobs, ranks, cores))


@contextmanager
def _pool(jobs: int) -> Iterator[Executor]:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield pool


def run_map(tasks: list[RankTask], jobs: int = 1, executor: Executor | None = None,
            progress: Progress | None = None) -> list[RankResult]:
    """Every task's result: cached ones read here, the rest on ``executor`` (module doc)."""
    results: list[RankResult] = []
    todo: list[RankTask] = []
    for task in tasks:
        cached = read_cached(task)
        if cached is None:
            todo.append(task)
        else:
            results.append(cached)
    done, total = len(results), len(tasks)
    if progress is not None:
        progress(done, total)
    if not todo:
        return results
    jobs = local_workers(jobs, len(todo))
    if executor is None and jobs <= 1:
        for task in todo:
            results.append(analyse_rank(task))
            done += 1
            if progress is not None:
                progress(done, total)
        return results
    with _pool(jobs) if executor is None else _borrowed(executor) as pool:
        futures: list[Future[RankResult]] = [pool.submit(analyse_rank, t) for t in todo]
        for future in as_completed(futures):
            results.append(future.result())
            done += 1
            if progress is not None:
                progress(done, total)
    return results


@contextmanager
def _borrowed(executor: Executor) -> Iterator[Executor]:
    yield executor  # the caller's executor: not ours to shut down


def summarize_ranks(path: str | Path, jobs: int = 1, executor: Executor | None = None,
                    use_cache: bool | None = None,
                    progress: Progress | None = None) -> RunAnswer:
    """The run's answer over its ranks: the map (per rank, on ``executor`` or ``jobs`` local
    processes) then the reduce (``reduce.reduce_ranks``)."""
    source, tasks = _source_tasks(path, use_cache)
    results = run_map(tasks, jobs, executor, progress)
    world = max((t.world_size for t in tasks), default=1)
    return reduce_ranks(results, world, str(source.path), source.record)


def dask_executor(address: str) -> Executor:
    """The executor of a Dask cluster (``pip install 'autoprof[dask]'``)."""
    try:
        from distributed import Client
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise RuntimeError("--dask needs dask's distributed scheduler: "
                           "pip install 'autoprof[dask]'") from err
    try:
        client = Client(address, timeout=30)  # type: ignore[no-untyped-call]
    except (ValueError, TypeError, OSError, TimeoutError) as err:  # 'tcp://[::1', no scheduler
        raise DaskAddressError(f"--dask {address!r}: {err or type(err).__name__}") from err
    executor: Executor = client.get_executor()  # type: ignore[no-untyped-call]
    return executor


class DaskAddressError(RuntimeError):
    """``--dask ADDRESS`` names no reachable Dask scheduler: one line, not a traceback."""
