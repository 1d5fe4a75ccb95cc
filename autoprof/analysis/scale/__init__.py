"""Runs of many ranks: each rank analysed on its own (the map), the run's answer a reduce.

``summarize_ranks(path, jobs=N, executor=None)`` returns a ``RunAnswer``: the straggler,
exposed communication, the ranks' spread, the worst ranks and outliers, the run's breakdown,
the rank table (``RunAnswer.report()``: the run's ``Report``, the type a run read as one
table gets, with its ``rank_by_rank`` section: scale/report.py); each rank's small
``RankResult`` is cached beside its trace (``<trace>.autoprof.rank``), so a second open reads
kilobytes per rank. The map runs on any ``concurrent.futures.Executor`` (a local process pool
by default; Dask's with ``dask_executor(address)``). It reads traces through the public
analysis layer (``autoprof.analysis``) and never holds more than one rank's events table per
worker.
"""

from __future__ import annotations

from autoprof.analysis.scale.rank_map import RankTask, analyse_rank
from autoprof.analysis.scale.ranks_run import dask_executor, rank_tasks, run_map, summarize_ranks
from autoprof.analysis.scale.reduce import RunAnswer, reduce_ranks
from autoprof.analysis.scale.result import RankResult

__all__ = ["RankResult", "RankTask", "RunAnswer", "analyse_rank", "dask_executor",
           "rank_tasks", "reduce_ranks", "run_map", "summarize_ranks"]
