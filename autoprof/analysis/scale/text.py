"""``autoprof summary DIR --jobs N`` / ``--dask ADDRESS``: the many-rank answer, as text,
Markdown or JSON.

The map/reduce's answer (``RunAnswer``) for runs too big for one events table, as the run's
``Report`` (scale/report.py), printed by the renderers every run goes through
(report/render.py) or as its JSON: the straggler, the run's breakdown, the ranks' spread, the
worst ranks and outliers, the verdict counts. Never a row per rank in the text (``--json``
keeps every rank's row).
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import Executor
from pathlib import Path

from autoprof.analysis.report.render import Format, render


def summary_at_scale(path: str | Path, jobs: int | None, dask: str | None, as_json: bool,
                     chosen: bool = False, fmt: Format = "text") -> int:
    """The CLI's many-rank summary in ``fmt`` (or JSON); returns the exit status. ``chosen``:
    the plain summary chose this path by itself (``auto.reads_rank_by_rank``), on one worker
    per core."""
    from autoprof.analysis import TraceError
    from autoprof.analysis.scale.ranks_run import (
        dask_executor,
        local_workers,
        summarize_ranks,
    )

    try:
        executor: Executor | None = dask_executor(dask) if dask else None
    except RuntimeError as err:  # DaskAddressError, or no distributed installed
        print(f"autoprof: error: {err}", file=sys.stderr)
        return 2

    if chosen and not jobs:
        jobs = os.cpu_count() or 1
        print(f"autoprof: {path}: many ranks, analysed one by one (--jobs N sets the workers)",
              file=sys.stderr)

    def progress(done: int, total: int) -> None:
        print(f"\rautoprof: {done}/{total} ranks analysed", end="", file=sys.stderr, flush=True)

    try:
        answer = summarize_ranks(path, jobs=jobs or 1, executor=executor, progress=progress)
    except TraceError as err:
        print(f"\nautoprof: error: {err}", file=sys.stderr)
        return 2
    how = f"Dask at {dask}" if dask else \
        f"{local_workers(jobs or 1, len(answer.ranks))} local process(es)"
    print(f"\rautoprof: {len(answer.ranks)} ranks analysed one by one on {how}", file=sys.stderr)
    report = answer.report()
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), allow_nan=False) + "\n")
    else:
        sys.stdout.write(render(report, fmt))
    return 0
