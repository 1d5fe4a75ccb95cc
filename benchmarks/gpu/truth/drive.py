"""Run the whole truth suite: per workload, ``record.py`` then ``ground_truth.py``, each in
its own process, one after the other (never two at once: they would time each other).

    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT [--only a,b] [--budget-s 480]
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --device cpu   # smoke, tiny
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --held-out 2   # the second set
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --only a,b --ground-truth-only
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --all --record-only
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --only a,b --per-fix

Writes ``OUT/ground_truth.json`` (every workload's ground truth and its recording's own
timings), ``OUT/runs.tar.gz`` (the run folders, ``runs/<workload>/<run_id>/``) and
``OUT/logs.tar.gz`` (each process's output). A workload not started within ``--budget-s``
seconds is listed as skipped. A workload whose ground-truth process loses its CUDA context
(an abort, or a CUDA error that takes the baseline down: some sync steps hit a device-side
assert only with every variant alive in one process) is timed again one fix at a time, each
beside the baseline in a process of its own (``--per-fix`` always does so), and merged
(``merge_pairs``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import WORKLOADS  # noqa: E402

DROP = (".autoprof.arrow", ".autoprof.summary.json")
# the issue's own cases first, so a run cut short by its budget still holds them
FIRST = ("mlp_loader_w0", "gpt2_tiny", "gpt2_large", "sync_mask", "seed_64", "seed_4096")


def _run(cmd: list[str], log: Path, timeout_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    rc: int | str
    with log.open("w") as fh:
        try:
            rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return {"rc": rc, "wall_s": round(time.perf_counter() - t0, 2)}


def _tail(log: Path, lines: int = 3) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _one(name: str, work: Path, device: str, extra: list[str], rounds: int,
         record: bool = True, ground_truth: bool = True, per_fix: bool = False
         ) -> dict[str, Any]:
    rec_dir, logs = work / "rec" / name, work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    base = [sys.executable]
    rec: dict[str, Any] | None = None
    if record:
        rec = _run(base + [str(HERE / "record.py"), "--workload", name, "--out", str(rec_dir),
                           "--device", device] + extra, logs / f"{name}.record.log", 100)
        print(f"[{name}] record {rec}: {_tail(logs / f'{name}.record.log', 1)}", flush=True)
    entry: dict[str, Any] = {"record_process": rec}
    rec_json = rec_dir / "record.json"
    entry["record"] = json.loads(rec_json.read_text()) if rec_json.exists() else None
    if not ground_truth:
        return entry
    gt: dict[str, Any] | None = None
    if not per_fix:
        gt_file = work / "gt" / f"{name}.json"
        gt = _run(_gt_cmd(name, gt_file, device, rounds, extra),
                  logs / f"{name}.ground_truth.log", 150)
        print(f"[{name}] ground truth {gt}: {_tail(logs / f'{name}.ground_truth.log', 1)}",
              flush=True)
        entry["ground_truth_process"] = gt
        entry["ground_truth"] = json.loads(gt_file.read_text()) if gt_file.exists() else None
    if per_fix or _context_lost(entry["ground_truth"]):  # each fix beside the baseline, alone
        pairs = _per_fix(name, work, device, rounds, extra)
        entry["ground_truth_process"] = {"all_variants": gt, "per_fix": pairs["processes"]}
        entry["ground_truth"] = pairs["merged"]
    return entry


def _gt_cmd(name: str, out: Path, device: str, rounds: int, extra: list[str]) -> list[str]:
    return [sys.executable, str(HERE / "ground_truth.py"), "--workload", name, "--out", str(out),
            "--device", device, "--rounds", str(rounds)] + extra


def _context_lost(result: dict[str, Any] | None) -> bool:
    """Whether the process timing every variant at once ended without its baseline: it
    aborted (no file), or a CUDA error ended its context."""
    if result is None:
        return True
    errors = result.get("errors", {})
    return "baseline" in errors or any("CUDA error" in e or "AcceleratorError" in e
                                       for e in errors.values())


def _per_fix(name: str, work: Path, device: str, rounds: int, extra: list[str]
             ) -> dict[str, Any]:
    """Each fix timed beside the baseline in a process of its own (``--pair``), merged."""
    logs = work / "logs"
    listed = subprocess.run(_gt_cmd(name, work / "unused.json", device, rounds, extra)
                            + ["--list"], capture_output=True, text=True, timeout=120)
    fixes = [f for f in json.loads(listed.stdout or "[]") if f != "baseline"]
    processes: dict[str, Any] = {}
    results: dict[str, dict[str, Any] | None] = {}
    for fix in fixes:
        out = work / "gt" / f"{name}.{fix}.json"
        log = logs / f"{name}.ground_truth.{fix}.log"
        processes[fix] = _run(_gt_cmd(name, out, device, rounds, extra) + ["--pair", fix], log,
                              150)
        print(f"[{name}] {fix} beside the baseline {processes[fix]}: {_tail(log, 1)}",
              flush=True)
        results[fix] = json.loads(out.read_text()) if out.exists() else None
    return {"processes": processes, "merged": merge_pairs(results)}


def merge_pairs(results: dict[str, dict[str, Any] | None]) -> dict[str, Any] | None:
    """One ground truth from per-fix processes: each fix's stats and speedup from its own
    process, over the baseline timed beside it (kept per fix under ``pair_baselines``);
    ``stats["baseline"]`` is the first pair's. A pair that lost its baseline or its fix lists
    the fix under ``errors``."""
    good = {f: r for f, r in results.items()
            if r is not None and "baseline" in r["stats"] and f in r["stats"]}
    if not good:
        return None
    first = next(iter(good.values()))
    merged: dict[str, Any] = {
        **first, "variants": {"baseline": first["variants"]["baseline"]}, "errors": {},
        "stats": {"baseline": first["stats"]["baseline"]}, "speedups": {},
        "skipped": [], "per_fix_processes": True, "pair_baselines": {}}
    for fix, r in results.items():
        if fix not in good:
            errors = (r or {}).get("errors", {})
            merged["errors"][fix] = errors.get(fix) or errors.get("baseline") or \
                "its process ended without a result"
            continue
        merged["variants"][fix] = r["variants"][fix]
        merged["stats"][fix] = r["stats"][fix]
        merged["speedups"][fix] = r["speedups"][fix]
        merged["pair_baselines"][fix] = r["stats"]["baseline"]
    return merged


def _pack(work: Path, out: Path, names: list[str]) -> None:
    with tarfile.open(out / "runs.tar.gz", "w:gz") as tar:
        for name in names:
            runs = work / "rec" / name / "runs"
            for path in sorted(runs.rglob("*")) if runs.exists() else []:
                if path.is_file() and not path.name.endswith(DROP):
                    tar.add(path, arcname=str(Path("runs") / path.relative_to(runs)))
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        tar.add(work / "logs", arcname="logs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--budget-s", type=float, default=480.0)
    parser.add_argument("--rounds", type=int, default=4)
    sets = sorted({w.held_out for w in WORKLOADS.values()} | {0})
    parser.add_argument("--held-out", type=int, default=0, choices=sets,
                        help="one held-out set only (2: the second, 3: the third, ...)")
    parser.add_argument("--all", action="store_true", help="every set, held out or not")
    parser.add_argument("--record-only", action="store_true",
                        help="record each workload, time no variant (the ground truth kept "
                             "from an earlier run)")
    parser.add_argument("--ground-truth-only", action="store_true",
                        help="time the variants, record nothing")
    parser.add_argument("--per-fix", action="store_true",
                        help="time each fix beside the baseline in a process of its own "
                             "(otherwise only when the process timing them all loses its "
                             "context)")
    args = parser.parse_args()
    first = list(FIRST) + [n for n in WORKLOADS if n not in FIRST and not WORKLOADS[n].held_out]
    names = [n for n in args.only.split(",") if n] or (
        first + [n for n in WORKLOADS if n not in first] if args.all else
        [n for n, w in WORKLOADS.items() if w.held_out == args.held_out] if args.held_out else
        first)
    extra = ["--tiny"] if args.device == "cpu" else []
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    result: dict[str, Any] = {"python": platform.python_version(), "device": args.device,
                              "autoprof_commit": os.environ.get("TRUTH_AUTOPROF_COMMIT"),
                              "workloads": {}, "skipped": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        done: list[str] = []
        for name in names:
            if time.perf_counter() - started > args.budget_s:
                result["skipped"].append(name)
                continue
            result["workloads"][name] = _one(name, work, args.device, extra, args.rounds,
                                             record=not args.ground_truth_only,
                                             ground_truth=not args.record_only,
                                             per_fix=args.per_fix)
            done.append(name)
        _pack(work, args.out, done)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    (args.out / "ground_truth.json").write_text(json.dumps(result, indent=1))
    print(f"done: {len(result['workloads'])} workloads in {result['wall_s']} s; "
          f"skipped {result['skipped']}")


if __name__ == "__main__":
    main()
