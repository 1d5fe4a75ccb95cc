"""How often `autoprof diff --gate` passes, fails or cannot tell, on this CPU under a load.

Records the small training-style step of ``benchmarks/diff_validation.py`` (two matmuls, a
relu, a log-softmax; one intra-op thread, float32) many times with `@autoprof`, each
recording in its own fresh process, while a busy process started here (a Python loop that
never sleeps) competes for the cores:

- ``same``: the program unchanged, recorded in pairs;
- ``+10%``: an extra ``aten::tanh`` costing about 10% of the step;
- ``2x``: an extra ``aten::tanh`` costing about as much as the step (the step about doubles).

Each case is judged against unchanged recordings with one, two and three recordings a side
(a side of several recordings is what a folder of run folders gives ``autoprof diff``), and
each diff is put to every gate in ``--gates``. Counted: ``pass`` (exit 0), ``fail`` (1),
``cannot tell`` (3) and ``not judged`` (2: not comparable or steps unreadable). What must
hold: a 2x regression never passes, and same-program pairs fail at most 1 time in 20.

Usage::

    PYTHONPATH=. python benchmarks/noise/gate_validation.py --out benchmarks/noise \
        [--rounds 12] [--budget-s 420] [--gates 5 20] [--no-load] [--work /tmp/gateval]

Writes ``results-cpu-gate.json`` into ``--out`` (the machine, the date, the command, each
diff's answer, change, interval and what would settle it, and the counts) and prints the
counts as a table. The recordings go to ``--work`` (a temporary folder unless given).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCHMARKS))
validation: Any = importlib.import_module("diff_validation")  # the recorded program

# case -> the extra tanh's cost as a share of the unchanged step
PLANTED = {"plus10": 0.10, "x2": 1.0}
WHAT = {"same": "same program", "plus10": "+10% (extra op)", "x2": "2x (extra op)"}
ANSWERS = ("pass", "fail", "cannot tell", "not judged")
SIDES = (1, 2, 3)
BUSY = "while True:\n    pass\n"


def _elements() -> dict[str, int]:
    """Elements of tanh costing each planted share of the step (timed once, here)."""
    ten = validation.tanh_elements("cpu")["tanh10"]
    return {case: max(1, int(ten * share / 0.10)) for case, share in PLANTED.items()}


def _rounds(rounds: int) -> list[list[tuple[str, str]]]:
    return [[("same", f"same_a{i:02d}"), ("same", f"same_b{i:02d}")]
            + [(case, f"{case}_{i:02d}") for case in PLANTED] for i in range(rounds)]


def record(work: Path, rounds: int, budget_s: float, started: float) -> dict[str, Any]:
    """The recordings, round by round, until the next round would pass the budget."""
    sizes = _elements()
    done, failed, cut = 0, [], False
    for batch in _rounds(rounds):
        spent = time.monotonic() - started
        if done and spent + spent / done * len(batch) > budget_s:
            cut = True
            break
        for case, name in batch:
            variant = "same" if case == "same" else f"tanh_{case}"
            problem = validation._record(work, "cpu", variant, name, sizes.get(case, 1))
            failed += [problem] if problem else []
            done += 1
    return {"recordings": done, "failed": failed, "cut_by_budget": cut,
            "record_s": round(time.monotonic() - started, 1), "tanh_elements": sizes}


def _judge(a: list[Any], b: list[Any], gates: list[float]) -> dict[str, Any]:
    from autoprof.analysis.diff import diff_facts, gate_answer

    result = diff_facts(a, b)
    judged = result.judged
    row: dict[str, Any] = {
        "verdict": result.verdict,
        "change_pct": None if judged is None else judged.change_pct,
        "ci_pct": None if judged is None else [judged.ci_low_pct, judged.ci_high_pct],
        "between_run_pct": None if judged is None else judged.between_run_pct,
        "gates": {}}
    for gate in gates:
        found = gate_answer(result, gate)
        row["gates"][f"{gate:g}"] = ({"answer": "not judged", "text": result.verdict}
                                     if found is None else
                                     {"answer": found.kind, "text": found.text})
    return row


def _groups(names: list[str], size: int) -> list[list[str]]:
    return [names[i:i + size] for i in range(0, len(names) - size + 1, size)]


def _case_rows(facts: dict[str, Any], size: int, gates: list[float]) -> dict[str, Any]:
    """Every case with ``size`` recordings a side: same pairs (A_i against B_i) and each
    planted group against an unchanged A group (taken in turn)."""
    names = sorted(facts)
    a = _groups([n for n in names if n.startswith("same_a")], size)
    b = _groups([n for n in names if n.startswith("same_b")], size)
    rows = {"same": [_judge([facts[n] for n in ga], [facts[n] for n in gb], gates)
                     for ga, gb in zip(a, b, strict=False)]}
    for case in PLANTED:
        planted = _groups([n for n in names if n.startswith(f"{case}_")], size)
        rows[case] = [_judge([facts[n] for n in a[j % len(a)]], [facts[n] for n in g], gates)
                      for j, g in enumerate(planted)] if a else []
    return rows


def counts(rows: list[dict[str, Any]], gate: str) -> dict[str, int]:
    return {answer: sum(r["gates"][gate]["answer"] == answer for r in rows)
            for answer in ANSWERS}


def evaluate(work: Path, gates: list[float]) -> dict[str, Any]:
    unread: list[str] = []
    facts = validation._facts(work, sorted(p.name for p in work.iterdir() if p.is_dir()),
                              unread)
    judged = {f"{size}_a_side": _case_rows(facts, size, gates) for size in SIDES}
    summary = {side: {case: {f"{g:g}": counts(rows, f"{g:g}") for g in gates}
                      for case, rows in cases.items()} for side, cases in judged.items()}
    return {"unread": unread, "counts": summary, "diffs": judged}


def table(summary: dict[str, Any]) -> str:
    lines = ["| runs a side | case | gate | n | pass | fail | cannot tell | not judged |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for side, cases in summary.items():
        for case, by_gate in cases.items():
            for gate, found in by_gate.items():
                lines.append(f"| {side.split('_')[0]} | {WHAT[case]} | {gate}% | "
                             f"{sum(found.values())} | "
                             + " | ".join(str(found[a]) for a in ANSWERS) + " |")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    import torch

    return {"cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "system": platform.platform(), "torch": torch.__version__,
            "python": platform.python_version(), "load_average": list(os.getloadavg())}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="results-cpu-gate.json here")
    parser.add_argument("--work", type=Path, default=None,
                        help="the recordings (default: a temporary folder, removed after)")
    parser.add_argument("--rounds", type=int, default=12,
                        help="rounds of recordings (a same pair, one of each planted case)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="start no round that would end past this many seconds")
    parser.add_argument("--gates", type=float, nargs="+", default=[5.0, 20.0])
    parser.add_argument("--no-load", action="store_true",
                        help="start no competing busy process")
    parser.add_argument("--evaluate", action="store_true", help="only judge what --work holds")
    return parser


def _run(args: argparse.Namespace, work: Path, started: float) -> dict[str, Any]:
    meta_path = work / "recording.json"
    if not args.evaluate:
        busy = None if args.no_load else subprocess.Popen([sys.executable, "-c", BUSY])
        try:
            meta = {"machine_at_start": machine(), "competing_load": busy is not None,
                    **record(work, args.rounds, args.budget_s, started)}
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        meta["load_average_at_end"] = list(os.getloadavg())
        meta_path.write_text(json.dumps(meta, indent=1))
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    return {"recording": meta, **evaluate(work, args.gates)}


def main() -> int:
    args = _parser().parse_args()
    started = time.monotonic()
    work = args.work or Path(tempfile.mkdtemp(prefix="gateval-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        results = _run(args, work, started)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    results = {"date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"),
               "command": " ".join(["python", *sys.argv]),
               "total_s": round(time.monotonic() - started, 1), **results}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results-cpu-gate.json").write_text(json.dumps(results, indent=1) + "\n")
    print(table(results["counts"]))
    for line in results["recording"].get("failed", []) + results["unread"]:
        print("not in the table:", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
