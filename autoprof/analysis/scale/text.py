"""``autoprof summary DIR --jobs N`` / ``--dask ADDRESS``: the many-rank answer, as text or JSON.

The map/reduce's answer (``RunAnswer``) for runs too big for one events table: the
straggler, the run's breakdown, the ranks' spread, the worst ranks and outliers, the verdict
counts. Never a row per rank by default (``--json`` keeps every rank's row).
"""

from __future__ import annotations

import json
import math
import os
import sys
from concurrent.futures import Executor
from pathlib import Path

from autoprof import units
from autoprof.analysis.metrics.ranks import ORDER_TEXT
from autoprof.analysis.scale.reduce import RunAnswer


def _ms(value_us: float | None) -> str:
    return "n/a" if value_us is None else units.fmt_us(value_us)


def _spread_line(label: str, spread: dict[str, float | None], unit: str) -> str:
    def show(v: float | None) -> str:
        if v is None:
            return "n/a"
        return _ms(v) if unit == "us" else f"{v:.1f}%"

    return (f"  {label:<22} median {show(spread['median'])}, MAD {show(spread['mad'])}, "
            f"min {show(spread['min'])}, p90 {show(spread['p90'])}, max {show(spread['max'])}")


def render(answer: RunAnswer, path: str | Path, how: str) -> str:
    """The text report of ``answer`` (module doc)."""
    bd = answer.breakdown
    lines = [f"autoprof summary: {path} (ranks analysed one by one: {how})",
             f"run: {answer.world_size} rank(s) | {answer.events} events", ""]
    if answer.straggler_rank is None:
        lines.append("STRAGGLER: none (the ranks are balanced, or never meet in collectives)")
    else:
        lines.append(f"STRAGGLER: rank {answer.straggler_rank} (the others wait for it)")
    lines += ["", f"WHERE THE TIME GOES (mean step {_ms(bd.get('step_us'))} over "
                  f"{bd.get('steps', 0)} steps of every rank)"]
    shares = sorted(bd.get("buckets_pct", {}).items(), key=lambda kv: -kv[1])
    lines += [f"  {name:<20} {pct:5.1f}%" for name, pct in shares]
    lines += ["", "RANKS' SPREAD",
              _spread_line("median step time", answer.spread["step_time_us_median"], "us"),
              _spread_line("exposed communication", answer.spread["exposed_comm_pct"], "pct"),
              "", f"SLOWEST RANKS, {ORDER_TEXT.get(answer.worst_by, answer.worst_by)}",
              "  (the straggler's rule; z: the median step's distance from the ranks' median "
              "in MADs)"]
    for w in answer.worst_ranks:
        compute = w.get("compute_us_median")
        compute = compute if isinstance(compute, float) and math.isfinite(compute) else None
        lines.append(f"  rank {w['rank']:>5}  step {_ms(w['step_time_us_median']):>9}  "
                     f"compute {_ms(compute):>9}  "
                     f"exposed comm {w['exposed_comm_pct']:5.1f}%  z {w['z']:6.1f}  "
                     f"{w['verdict']}")
    outliers = answer.outliers
    shown = ", ".join(map(str, outliers[:20])) + (" ..." if len(outliers) > 20 else "")
    lines.append(f"  outliers (|z| > 3.5): {shown or 'none'}")
    lines += ["", "VERDICTS: " + ", ".join(f"{k} {v}" for k, v in
                                           sorted(answer.verdicts.items()))]
    if answer.warnings:
        lines += ["", f"WARNINGS ({len(answer.warnings)})", *answer.warnings[:10]]
    return "\n".join(lines) + "\n"


def summary_at_scale(path: str | Path, jobs: int | None, dask: str | None, as_json: bool,
                     chosen: bool = False) -> int:
    """The CLI's many-rank summary; returns the exit status. ``chosen``: the plain summary
    chose this path by itself (``auto.reads_rank_by_rank``), on one worker per core."""
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
    print(file=sys.stderr)
    how = f"Dask at {dask}" if dask else \
        f"{local_workers(jobs or 1, len(answer.ranks))} local process(es)"
    if as_json:
        sys.stdout.write(json.dumps(answer.to_dict(), allow_nan=False) + "\n")
    else:
        sys.stdout.write(render(answer, path, how))
    return 0
