"""Every replayable fix of the truth folders, predicted against the fix timed by hand.

    python benchmarks/gpu/truth/evaluate.py DIR [DIR...] [--json OUT]

Each DIR holds a `ground_truth.json` and the run folders it names (`drive.py`'s output,
unpacked: `tests/data/gpu_h200_truth/`). For every workload, every fix of its ground truth
that maps onto a named replay fix (`named_fix`) is replayed on the workload's run folder:
the host costs are first scaled (`metrics/replay/baseline.py`) so that the replayed step
equals the profiler-free baseline iteration (when the step holds the caller's loop, the
call's own host first to the run's untraced calls), then the fix's changes are replayed
(`autoprof/analysis/metrics/replay/fixes.py`). *predicted* is the median over the profiled
steps (min-max), *measured* the ratio of the medians of the whole iteration (baseline q1 /
fix q3 to baseline q3 / fix q1), *error* (predicted - measured) / measured.

Prints the markdown table of the pairs (docs/validation.md has the summaries per set),
then per folder and over all folders: the pairs, median |error|, the largest |error|, how
many within 25%, and in how many workloads the fix with the largest prediction is the best
fix measured (of every fix tried, modelled or not). A fix it cannot map, a fix that failed on
the GPU, a run folder that is missing or a replay that fails is skipped with a note; nothing
is guessed. `--json OUT` writes the pairs, the notes and the summaries.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import autoprof
from autoprof.analysis.metrics.replay import Change, predict_speedups
from autoprof.analysis.metrics.replay.baseline import host_baseline
from autoprof.analysis.metrics.replay.fixes import WORKERS as WORKERS_DEFAULT
from autoprof.analysis.metrics.replay.fixes import FixName, fix_changes
from autoprof.analysis.metrics.replay.loop import loop_split

# which measured fix is which named fix, and the pairs: with the test support code, whose
# unit tests hold the shown predictions to the same truth
sys.path.append(str(Path(__file__).resolve().parents[3] / "tests"))
from support.truth_pairs import Pair, Workload, named_fix  # noqa: E402

# workloads looked at while the model was changed, in the folders they were recorded in (the
# rest of those folders was only evaluated; any other folder is held out)
TUNED = ("sync_item", "sync_mask", "mlp_loader_w0", "cnn_loader_w4", "compiled_mlp", "seed_64",
         "gpt2_large", "two_streams", "sync_nonzero")
TUNED_FOLDERS = ("gpu_h200_truth", "gpu_h200_truth_heldout")
WITHIN = 0.25  # a prediction further than this from the measurement misses


def workers_of(fix: str) -> int:
    """The DataLoader workers a fix names (`workers8_...`: 8), else the named fix's default."""
    got = re.match(r"^workers(\d+)", fix)
    return int(got.group(1)) if got else WORKERS_DEFAULT


@dataclass
class Folder:
    """One truth folder evaluated: its workloads and what was skipped, and why."""

    path: Path
    workloads: list[Workload] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def pairs(self) -> list[Pair]:
        return [p for w in self.workloads for p in w.pairs]


def baseline_changes(run: autoprof.Run, gt: dict[str, Any]) -> list[Change]:
    """The host scaled to the profiler-free baseline iteration (and, when the step holds the
    caller's loop, the call's host to the run's own untraced calls): `host_baseline`."""
    baseline_us = 1000.0 * float(gt["stats"]["baseline"]["iter_ms"]["median"])
    loop = loop_split(run.events, run.name)
    ref = dataclasses.replace(run.analysis.reference, step_us=baseline_us)
    return host_baseline(run.events, run.name, loop, ref)


def _pair(folder: str, name: str, fix: str, named: FixName, run: autoprof.Run,
          baseline: list[Change], measured: dict[str, Any]) -> Pair:
    """One fix replayed (`measured`: its iteration speedup, lo and hi)."""
    got = predict_speedups(run.events, fix_changes(named, run.name, workers_of(fix),
                                                   run.analysis.graph_input_copy_us),
                           baseline=baseline)
    return Pair(folder, name, fix, named, got.median, got.low, got.high,
                float(measured["speedup"]), float(measured["lo"]), float(measured["hi"]))


def _measured(speedups: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The fixes with a numeric iteration speedup and its range (others are left out)."""
    out = {}
    for fix, sp in speedups.items():
        it = sp.get("iter") if isinstance(sp, dict) else None
        if isinstance(it, dict) and all(isinstance(it.get(k), int | float)
                                        for k in ("speedup", "lo", "hi")):
            out[fix] = it
    return out


def evaluate_workload(root: Path, name: str, w: dict[str, Any], notes: list[str]) -> Workload:
    """Every mappable fix of one workload replayed (notes: what was left out, and why)."""
    gt, record = w.get("ground_truth") or {}, w.get("record") or {}
    measured = _measured(gt.get("speedups") or {})
    out = Workload(root.name, name)
    for fix in gt.get("errors") or {}:
        notes.append(f"{name}: `{fix}` failed on the GPU (no measurement)")
    if not measured:
        notes.append(f"{name}: no fix measured")
        return out
    out.best_measured = max(measured, key=lambda f: float(measured[f]["speedup"]))
    run_dir = root / str(record.get("run", ""))
    if not record.get("run") or not run_dir.is_dir():
        notes.append(f"{name}: no run folder ({record.get('run')!r})")
        return out
    try:
        run = autoprof.load(run_dir)
        baseline = baseline_changes(run, gt)
    except Exception as e:  # noqa: BLE001 - one workload's failure is a note, not the end
        notes.append(f"{name}: replay failed ({type(e).__name__}: {e})")
        return out
    for fix, it in measured.items():
        named = named_fix(fix)
        if named is None:
            notes.append(f"{name}: `{fix}` has no replayed fix")
            continue
        try:
            out.pairs.append(_pair(root.name, name, fix, named, run, baseline, it))
        except Exception as e:  # noqa: BLE001
            notes.append(f"{name}: `{fix}` replay failed ({type(e).__name__}: {e})")
    if out.pairs:
        out.top_predicted = max(out.pairs, key=lambda p: p.predicted).fix
    return out


def evaluate_folder(root: Path) -> Folder:
    """Every workload of one truth folder, in the order of its ground_truth.json."""
    folder = Folder(root)
    data = json.loads((root / "ground_truth.json").read_text())
    for name, w in (data.get("workloads") or {}).items():
        folder.workloads.append(evaluate_workload(root, name, w, folder.notes))
    return folder


def summarize(workloads: Sequence[Workload]) -> dict[str, Any]:
    """Median and largest |error| (percent), pairs within 25%, top pick the best fix."""
    errors = np.abs(np.asarray([p.error for w in workloads for p in w.pairs], float))
    judged = [w for w in workloads if w.best_measured is not None]
    return {
        "pairs": len(errors),
        "median_abs_error_pct": float(100 * np.median(errors)) if len(errors) else None,
        "max_abs_error_pct": float(100 * errors.max()) if len(errors) else None,
        "within_25_pct": int(np.sum(errors <= WITHIN)),
        "workloads": len(judged),
        "top_pick_best": sum(w.top_is_best for w in judged),
    }


def _set_of(folder: str, workload: str, tuned: Sequence[str]) -> str:
    return "tuned" if workload in tuned and folder in TUNED_FOLDERS else "held out"


def table(pairs: Sequence[Pair], tuned: Sequence[str] = TUNED) -> str:
    """The markdown table, one row per pair."""
    rows = ["| workload | set | fix (named fix) | predicted (min-max over steps) | "
            "measured (q1/q3 range) | error |", "| --- | --- | --- | --- | --- | --- |"]
    for p in pairs:
        rows.append(
            f"| {p.workload} | {_set_of(p.folder, p.workload, tuned)} | `{p.fix}` "
            f"(`{p.named}`) | {p.predicted:.2f}x ({p.predicted_min:.2f}-{p.predicted_max:.2f})"
            f" | {p.measured:.2f}x ({p.measured_lo:.2f}-{p.measured_hi:.2f}) | "
            f"{100 * p.error:+.0f}% |")
    return "\n".join(rows)


def _summary_line(label: str, s: dict[str, Any]) -> str:
    if not s["pairs"]:
        return f"- **{label}**: no replayed pair; top pick best in {s['top_pick_best']} of " \
               f"{s['workloads']} workloads"
    return (f"- **{label}**: {s['pairs']} pairs, median |error| {s['median_abs_error_pct']:.1f}%"
            f", worst {s['max_abs_error_pct']:.1f}%, {s['within_25_pct']} within 25%; top pick "
            f"the best fix measured in {s['top_pick_best']} of {s['workloads']} workloads")


def report(folders: Sequence[Folder], tuned: Sequence[str] = TUNED) -> dict[str, Any]:
    """The summaries per folder, per set (tuned, held out) and overall."""
    every = [w for f in folders for w in f.workloads]
    out = {f.path.name: summarize(f.workloads) for f in folders}
    out["tuned"] = summarize([w for w in every if _set_of(w.folder, w.name, tuned) == "tuned"])
    out["held out"] = summarize([w for w in every
                                 if _set_of(w.folder, w.name, tuned) != "tuned"])
    out["all"] = summarize(every)
    return out


def parse_args(argv: Sequence[str] | None, doc: str | None) -> argparse.Namespace:
    """The truth scripts' command line: truth folders, and --json OUT (`doc`: the script's
    docstring, whose first line describes it)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n", 1)[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="truth folders (ground_truth.json)")
    parser.add_argument("--json", type=Path, help="write pairs, notes and summaries here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv, __doc__)
    folders = [evaluate_folder(d) for d in args.dirs]
    summaries = report(folders)
    print(table([p for f in folders for p in f.pairs]))
    print()
    for label, s in summaries.items():
        print(_summary_line(label, s))
    notes = [f"{f.path.name}: {n}" for f in folders for n in f.notes]
    if notes:
        print("\nNot replayed:")
        print("\n".join(f"- {n}" for n in notes))
    if args.json:
        args.json.write_text(json.dumps({
            "pairs": [{**asdict(p), "error_pct": 100 * p.error} for f in folders
                      for p in f.pairs],
            "workloads": [{"folder": w.folder, "workload": w.name,
                           "best_measured": w.best_measured, "top_predicted": w.top_predicted,
                           "top_is_best": w.top_is_best} for f in folders for w in f.workloads],
            "notes": notes, "summary": summaries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
