"""Run the whole truth suite: per workload, ``record.py`` then ``ground_truth.py``, each in
its own process, one after the other (never two at once: they would time each other).

    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT [--only a,b] [--budget-s 480]
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --device cpu   # smoke, tiny
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --held-out 2   # the second set
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --only a,b --ground-truth-only
    PYTHONPATH=. python benchmarks/gpu/truth/drive.py --out OUT --all --record-only

Writes ``OUT/ground_truth.json`` (every workload's ground truth and its recording's own
timings), ``OUT/runs.tar.gz`` (the run folders, ``runs/<workload>/<run_id>/``) and
``OUT/logs.tar.gz`` (each process's output). A workload not started within ``--budget-s``
seconds is listed as skipped.
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
         record: bool = True, ground_truth: bool = True) -> dict[str, Any]:
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
    gt_file = work / "gt" / f"{name}.json"
    gt_cmd = base + [str(HERE / "ground_truth.py"), "--workload", name, "--out", str(gt_file),
                     "--device", device, "--rounds", str(rounds)] + extra
    gt = _run(gt_cmd, logs / f"{name}.ground_truth.log", 150)
    print(f"[{name}] ground truth {gt}: {_tail(logs / f'{name}.ground_truth.log', 1)}", flush=True)
    culprit = _context_killer(gt_file)
    killed: dict[str, str] = {}
    if culprit is not None:  # a CUDA error ends the context: again, without that fix
        killed = {culprit: json.loads(gt_file.read_text())["errors"][culprit]}
        gt = _run(gt_cmd + ["--skip", culprit], logs / f"{name}.ground_truth.rerun.log", 150)
        print(f"[{name}] rerun without {culprit} {gt}", flush=True)
    entry["ground_truth_process"] = gt
    entry["ground_truth"] = json.loads(gt_file.read_text()) if gt_file.exists() else None
    if killed and entry["ground_truth"] is not None:
        entry["ground_truth"]["errors"].update(killed)
    return entry


def _context_killer(gt_file: Path) -> str | None:
    """The first variant whose error is a CUDA error, if it took the baseline down too."""
    if not gt_file.exists():
        return None
    errors = json.loads(gt_file.read_text()).get("errors", {})
    if "baseline" not in errors:
        return None
    for name, text in errors.items():
        if "CUDA error" in text or "AcceleratorError" in text:
            return None if name == "baseline" else name
    return None


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
                                             ground_truth=not args.record_only)
            done.append(name)
        _pack(work, args.out, done)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    (args.out / "ground_truth.json").write_text(json.dumps(result, indent=1))
    print(f"done: {len(result['workloads'])} workloads in {result['wall_s']} s; "
          f"skipped {result['skipped']}")


if __name__ == "__main__":
    main()
