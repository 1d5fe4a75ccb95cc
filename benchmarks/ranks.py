"""Many ranks: time and peak memory of analysing a run of N rank traces, side by side.

Runs (``many_ranks.py``) of N ranks x ``--events`` trace events each, gzipped, tiled from real
NCCL DDP traces. Every measurement is one fresh process (``_measure.run_child``: its own peak
RSS from ``VmHWM`` and the children it waited for), the contenders alternating at each size:

- ``merged``: ``autoprof.load(DIR).summary()``, the one-table path: every rank decoded into
  one merged events table, then the whole summary over it (no cache: ``AUTOPROF_CACHE=0``);
- ``map``: ``autoprof.analysis.scale.summarize_ranks(DIR, jobs=J)``: each rank analysed on
  its own in a process pool into a small per-rank result cached beside its trace, the run's answer a
  reduce over those (per-rank caches removed before each first open);
- ``map-cached``: the same call again once the per-rank caches exist (the second open);
- ``summary``: the plain ``autoprof summary DIR --json``, whichever path it takes by itself
  (``analysis/scale/auto.py``: the map from 16 ranks, on one worker per core; no cache);
- ``dask``: the map on a Dask ``LocalCluster`` (when dask is installed), to check it gives the
  same answer as one process.

Each child reports the run's answer (straggler rank, the ranks' exposed communication), so
the table says whether the contenders agree. Results as JSON with every sample (``--out``: a
``.json`` file, or a folder that gets ``ranks.json`` and the table as ``ranks.md``).
``--budget-s`` skips a size whose projected time (the previous size's, scaled by the ratio of
ranks) would end past the budget, so a run on a lent machine always finishes in its slot.

    .venv/bin/python benchmarks/ranks.py --ranks 8,32,128 --events 20000 [--modes merged,map]
    python benchmarks/ranks.py --ranks 128,256,512,1024 --modes map,map-cached --jobs 16 \
        --budget-s 420 --out OUT_DIR          # the 16-core host: linearity up to 1,024 ranks
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from many_ranks import ensure_run  # noqa: E402

from _measure import MeasureError, MeasureTimeout, Stats, run_child  # noqa: E402

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/benchmarks")
mode, folder, jobs = sys.argv[2], sys.argv[3], int(sys.argv[4])
import numpy, pandas  # imported before the clock, as every benchmark here does
from _measure import emit
t0 = time.perf_counter()
if mode == "merged":
    import autoprof.analysis
    run = autoprof.analysis.load(folder)
    s = run.summary()
    answer = {"straggler_rank": s.get("straggler_rank"),
              "exposed_comm_pct": [round(float(r["exposed_comm_pct"]), 6) for r in s["ranks"]],
              "ranks": len(s["ranks"]), "events": s["events"]}
elif mode == "summary":
    import contextlib, io
    from autoprof.cli import main
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        main(["summary", folder, "--json"])
    s = json.loads(text.getvalue())
    chosen = "rank_by_rank" in s  # the map's report (analysis/scale/auto.py chose it)
    jobs = __import__("os").cpu_count() if chosen else 0
    answer = {"straggler_rank": s.get("straggler_rank"),
              "exposed_comm_pct": [round(float(r["exposed_comm_pct"]), 6) for r in s["ranks"]],
              "ranks": len(s["ranks"]), "events": s["events"], "map_chosen": chosen}
else:
    from autoprof.analysis.scale import summarize_ranks
    executor = None
    if mode == "dask":
        from distributed import Client, LocalCluster
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False)
        executor = Client(cluster).get_executor()
    t0 = time.perf_counter()
    result = summarize_ranks(folder, jobs=jobs, executor=executor)
    answer = {"straggler_rank": result.straggler_rank,
              "exposed_comm_pct": [round(float(r.exposed_comm_pct), 6) for r in result.ranks],
              "ranks": len(result.ranks), "events": result.events}
work_s = time.perf_counter() - t0
import resource
from _measure import proc_status_mb
# the largest process is emit's peak; with workers the sum is at most parent + jobs x worker
own = proc_status_mb("self", "VmHWM")
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
emit({"work_s": work_s, "parent_peak_mb": own, "worker_peak_mb": kids,
      "all_processes_peak_bound_mb": own + (jobs if mode in ("map", "summary") else 0) * kids,
      **answer})
"""


def _clear_caches(folder: Path) -> None:
    """Every cache autoprof keeps beside the run's traces: the table's, the summary's and
    each rank's result (their suffixes from the package, so a renamed one is still cleared)."""
    from autoprof.analysis.loader.cache import SUFFIX as TABLE
    from autoprof.analysis.report.summary_cache import SUFFIX as SUMMARY
    from autoprof.analysis.scale.rank_map import SUFFIX as RANK

    for suffix in (TABLE, SUMMARY, RANK):
        for path in folder.rglob(f"*{suffix}"):
            path.unlink()


def measure(mode: str, folder: Path, jobs: int, timeout_s: float) -> dict[str, Any]:
    """One fresh process of ``mode`` on ``folder``: its wall time, peak RSS and answer."""
    if mode in ("merged", "map", "dask"):
        _clear_caches(folder)
    if mode == "summary":
        _clear_caches(folder)
    env = {"AUTOPROF_CACHE": "0"} if mode in ("merged", "summary") else {}
    argv = [sys.executable, "-c", _CHILD, str(REPO), mode if mode != "map-cached" else "map",
            str(folder), str(jobs)]
    try:
        sample = run_child(argv, env=env, timeout_s=timeout_s, cwd=str(REPO))
    except MeasureTimeout as exc:
        return {"mode": mode, "error": str(exc), "timeout_s": exc.timeout_s,
                "peak_rss_mb": exc.peak_rss_mb}
    except MeasureError as exc:
        return {"mode": mode, "error": str(exc)[-2000:]}
    return {"mode": mode, "peak_rss_mb": sample.peak_rss_mb, "process_s": sample.wall_s,
            **sample.values}


def _row(world: int, mode: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [s for s in samples if "error" not in s]
    answers = {json.dumps([s["straggler_rank"], s["exposed_comm_pct"]]) for s in ok}
    return {"ranks": world, "mode": mode, "n": len(ok),
            "work_s": Stats.of([s["work_s"] for s in ok]).as_dict(),
            "peak_rss_mb": Stats.of([s["peak_rss_mb"] for s in ok]).as_dict(),
            "all_mb": max([s.get("all_processes_peak_bound_mb", 0.0) for s in ok],
                          default=float("nan")),
            "straggler_rank": ok[0]["straggler_rank"] if ok else None,
            "answer": ok[0] if len(answers) == 1 else None,
            "errors": [s["error"] for s in samples if "error" in s]}


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| ranks | mode | time s: median [min-max] | peak RSS MB (largest process) "
          "| all processes MB (bound) | straggler | n |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        t, m = r["work_s"], r["peak_rss_mb"]
        lines.append(f"| {r['ranks']} | {r['mode']} | {t['median']:.3g} "
                     f"[{t['min']:.3g}-{t['max']:.3g}] | {m['median']:,.0f} | "
                     f"{r['all_mb']:,.0f} | {r['straggler_rank']} | {r['n']}"
                     f"{' ERR ' + r['errors'][0][:200] if r['errors'] else ''} |")
    return "\n".join(lines) + "\n"


def _outputs(out: Path | None) -> tuple[Path | None, Path | None]:
    """(the JSON file, the table file) that ``--out`` names (module doc)."""
    if out is None or out.suffix == ".json":
        return out, None
    out.mkdir(parents=True, exist_ok=True)
    return out / "ranks.json", out / "ranks.md"


def _over_budget(budget_s: float | None, started: float, last: tuple[int, float] | None,
                 world: int) -> bool:
    """Whether ``world`` ranks, projected from the last size's seconds, would end past the
    budget (a size is never skipped before one has been measured)."""
    if budget_s is None or last is None:
        return False
    projected_s = last[1] * world / last[0]
    return time.perf_counter() - started + projected_s > budget_s


def _require_msgspec(json_path: Path | None) -> None:
    """Stop at once, saying so in the output, where the loader's decoder is missing."""
    try:
        import msgspec  # noqa: F401 - the loader's decoder, needed by every child
    except ImportError:
        message = "msgspec is not importable: put it on PYTHONPATH (the loader needs it)"
        if json_path:
            json_path.write_text(json.dumps({"error": message}) + "\n")
        raise SystemExit(message) from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="8,32,128")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--modes", default="merged,map,map-cached")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--work", type=Path, default=HERE / "out" / "ranks")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the generated runs")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="skip sizes projected to end past this many seconds")
    args = parser.parse_args()
    json_path, table_path = _outputs(args.out)
    _require_msgspec(json_path)
    started, last = time.perf_counter(), None
    modes = args.modes.split(",")
    result: dict[str, Any] = {"machine": {"python": platform.python_version(),
                                          "cpus": os.cpu_count(), "load": os.getloadavg()},
                              "events_per_rank": args.events, "jobs": args.jobs,
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "rows": [], "samples": [], "skipped": []}
    for world in (int(x) for x in args.ranks.split(",")):
        if _over_budget(args.budget_s, started, last, world):
            result["skipped"].append(world)
            print(f"# {world} ranks skipped: projected past --budget-s", flush=True)
            continue
        t0 = time.perf_counter()
        folder = ensure_run(args.work, world, args.events)
        print(f"# {world} ranks written in {time.perf_counter() - t0:.1f} s", flush=True)
        samples: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for k in range(args.repeat):
            for mode in (modes if k % 2 == 0 else modes[::-1]):
                if mode == "map-cached" and not samples.get("map"):
                    measure("map", folder, args.jobs, args.timeout)  # the caches to read
                sample = measure(mode, folder, args.jobs, args.timeout)
                sample["ranks"] = world
                samples[mode].append(sample)
                result["samples"].append(sample)
                shown = {k: v for k, v in sample.items() if k != "exposed_comm_pct"}
                print(f"#   {mode}: {json.dumps(shown)[:300]}", flush=True)
        result["rows"].extend(_row(world, m, samples[m]) for m in modes)
        result["machine"]["load_end"] = os.getloadavg()
        last = (world, time.perf_counter() - t0)
        if json_path:
            json_path.write_text(json.dumps(result, indent=1) + "\n")
        if table_path:
            table_path.write_text(_table(result["rows"]))
        if not args.keep:
            shutil.rmtree(folder)
    print(_table(result["rows"]), end="")


if __name__ == "__main__":
    main()
