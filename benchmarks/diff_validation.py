"""How often `autoprof diff` is right: false alarms and planted regressions, on CPU or a GPU.

Records a small training-style step (two matmuls, a relu, a log-softmax; on CPU one intra-op
thread, float32; on CUDA bfloat16 with ``sync=True`` so a step's time holds its GPU work) many
times with `@autoprof`, each recording in its own fresh process:

- ``same``: the program unchanged, ``--pairs`` recordings a side; each pair (A_i, B_i) must
  give ``no significant change``;
- planted changes, each recorded ``--planted`` times and diffed against an unchanged
  recording; each must give ``slower`` with the planted op first in the diff's ``why`` (the
  outermost op the user called): an extra op costing about 5%, 10% and 50% of the step
  (``aten::tanh`` over a tensor sized for it: on CUDA a kernel's worth of extra GPU work),
  an extra copy (``h.clone()``: ``aten::clone``), the step in a wider type (``aten::matmul``:
  float64 for float32 on CPU, float32 for bfloat16 on CUDA); on CUDA also a
  ``.item()`` added (``aten::item``, a sync) and the batch processed as two half batches
  (``batch``: the heavy ops run on other shapes, so the expected verdict is
  ``not comparable``).

Every case is judged twice: one recording a side, and three recordings a side (repeats, whose
spread between runs the diff then measures, as for a folder of run folders).

Usage::

    PYTHONPATH=. python benchmarks/diff_validation.py --out /tmp/diffval [--device cpu|cuda]
        [--pairs 20] [--planted 10] [--jobs 1] [--budget-s 300] [--work /tmp/recordings]
    PYTHONPATH=. python benchmarks/diff_validation.py --out /tmp/diffval --work /tmp/recordings
        --evaluate

Prints one table and writes ``results.json`` (rates, each diff's verdict, change, interval and
first cause, the machine) and ``kept/`` (the first pair and the first recording of each
planted change, small run folders) into ``--out``; the recordings themselves go to ``--work``
(a temporary folder, removed after, unless given).
Recordings start in rounds (a pair, then one of each planted change) until ``--budget-s``
would be passed, so a slow machine ends with fewer, balanced recordings, and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# variant -> (planted op, extra-op cost as a share of the step, expected verdict, what)
Case = tuple[str, float, str, str]
PLANTED: dict[str, dict[str, Case]] = {
    "cpu": {
        "tanh5": ("aten::tanh", 0.05, "slower", "an extra op costing ~5% of the step"),
        "tanh10": ("aten::tanh", 0.10, "slower", "an extra op costing ~10% of the step"),
        "tanh50": ("aten::tanh", 0.50, "slower", "an extra op costing ~50% of the step"),
        "clone": ("aten::clone", 0.0, "slower", "an extra copy of the activations"),
        "wide": ("aten::matmul", 0.0, "slower", "the step in float64, not float32"),
    },
    "cuda": {
        "tanh5": ("aten::tanh", 0.05, "slower", "extra GPU work costing ~5% of the step"),
        "tanh10": ("aten::tanh", 0.10, "slower", "extra GPU work costing ~10% of the step"),
        "tanh50": ("aten::tanh", 0.50, "slower", "extra GPU work costing ~50% of the step"),
        "clone": ("aten::clone", 0.0, "slower", "an extra copy of the activations"),
        "wide": ("aten::matmul", 0.0, "slower", "the step in float32, not bfloat16"),
        "item": ("aten::item", 0.0, "slower", "a .item() added (a sync)"),
        "batch": ("aten::matmul", 0.0, "not comparable", "the batch as two half batches"),
    },
}
STEPS = 12
REPEATS = 3  # recordings a side in the repeats judgement
SHAPES = {"cpu": (256, 512), "cuda": (4096, 4096)}  # (batch, width)

PROGRAM = r"""
import sys, torch
from autoprof import autoprof
variant, out, name, elements, device = sys.argv[1:6]
torch.manual_seed(0)
cuda = device == "cuda"
if not cuda:
    torch.set_num_threads(1)
kind, wide = (torch.bfloat16, torch.float32) if cuda else (torch.float32, torch.float64)
batch, width = BATCH if not cuda else CUDA_BATCH, WIDTH if not cuda else CUDA_WIDTH
x = torch.randn(batch, width, device=device).to(kind)
w1 = (torch.randn(width, width, device=device) / width ** 0.5).to(kind)
w2 = (torch.randn(width, width // 2, device=device) / width ** 0.5).to(kind)
if variant == "wide":  # the whole step in the wider type (a model left in float32, say)
    x, w1, w2 = x.to(wide), w1.to(wide), w2.to(wide)
extra = torch.randn(int(elements), device=device)

def forward(x):
    h = torch.relu(x @ w1)
    if variant.startswith("tanh"):
        torch.tanh(extra)
    if variant == "clone":
        h = h.clone()
    if variant == "item":
        h.amax().item()
    y = h @ w2
    return torch.log_softmax(y.float(), dim=1).mean()

@autoprof(name=name, out_dir=out, warmup_calls=3, source_lines=False, sync=cuda,
          activities=("cpu", "cuda") if cuda else ("cpu",),
          schedule=dict(wait=1, warmup=1, active=STEPS))
def step(x):
    if variant == "batch":
        half = x.shape[0] // 2
        return (forward(x[:half]) + forward(x[half:])) / 2
    return forward(x)

for _ in range(3 + 1 + 1 + STEPS):
    step(x)
"""


def _program() -> str:
    (cb, cw), (gb, gw) = SHAPES["cpu"], SHAPES["cuda"]
    return (PROGRAM.replace("CUDA_BATCH", str(gb)).replace("CUDA_WIDTH", str(gw))
            .replace("BATCH", str(cb)).replace("WIDTH", str(cw)).replace("STEPS", str(STEPS)))


def _timed_s(fn: Any, device: str, n: int = 30) -> float:
    import torch

    for _ in range(5):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


def tanh_elements(device: str) -> dict[str, int]:
    """Elements of tanh costing each planted share of the unchanged step (timed once here)."""
    import torch

    if device == "cpu":
        torch.set_num_threads(1)
    batch, width = SHAPES[device]
    kind = torch.bfloat16 if device == "cuda" else torch.float32
    x = torch.randn(batch, width, device=device).to(kind)
    w1 = torch.randn(width, width, device=device).to(kind)
    w2 = torch.randn(width, width // 2, device=device).to(kind)
    step_s = _timed_s(lambda: torch.log_softmax((torch.relu(x @ w1) @ w2).float(), 1).mean(),
                      device)
    big = torch.randn(64_000_000 if device == "cuda" else 1_000_000, device=device)
    per_element_s = _timed_s(lambda: torch.tanh(big), device) / big.numel()
    return {v: max(1, int(share * step_s / per_element_s)) if share else 1
            for v, (_, share, _, _) in PLANTED[device].items()}


def _record(out: Path, device: str, variant: str, name: str, elements: int) -> str | None:
    """Record one run in a fresh process; the failure, in one line, if it failed."""
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU run on a GPU host: no CUDA context, no CUPTI
    done = subprocess.run([sys.executable, "-c", _program(), variant, str(out), name,
                           str(elements), device], env=env, stderr=subprocess.PIPE, text=True)
    if done.returncode == 0:
        return None
    shutil.rmtree(out / name, ignore_errors=True)  # no half run in the evaluation
    lines = done.stderr.strip().splitlines()
    return f"{name}: exit {done.returncode}: {lines[-1] if lines else ''}"


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parents[1])
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)


def _rounds(pairs: int, planted: int, variants: list[str]) -> list[list[tuple[str, str]]]:
    """(variant, name) to record, in rounds: a pair of the unchanged program, one of each
    planted change, so a budget cut leaves each case about as many recordings."""
    rounds = []
    for i in range(max(pairs, planted)):
        batch = [("same", f"same_a{i:02d}"), ("same", f"same_b{i:02d}")] if i < pairs else []
        batch += [(v, f"{v}_{i:02d}") for v in variants if i < planted]
        rounds.append(batch)
    return rounds


def record(out: Path, device: str, pairs: int, planted: int, jobs: int,
           budget_s: float, started: float) -> dict[str, Any]:
    sizes = tanh_elements(device)
    done, cut, failed = 0, False, []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for batch in _rounds(pairs, planted, list(PLANTED[device])):
            spent = time.monotonic() - started
            if done and spent + spent / done * len(batch) > budget_s:
                cut = True
                break
            failed += [f for f in pool.map(
                lambda vn: _record(out, device, vn[0], vn[1], sizes.get(vn[0], 1)), batch) if f]
            done += len(batch)
    return {"recordings": done, "failed": failed,
            "record_s": round(time.monotonic() - started, 1), "cut_by_budget": cut,
            "tanh_elements": sizes, "jobs": jobs}


def _run_dir(out: Path, name: str) -> Path:
    return sorted((out / name).iterdir())[-1]


def keep(work: Path, out: Path, names: list[str]) -> list[str]:
    """Copy the first pair and the first recording of each planted change into out/kept/
    (small run folders a test can pin)."""
    firsts = [n for n in names if n.endswith("_00") or n in ("same_a00", "same_b00")]
    for name in firsts:
        target = out / "kept" / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(_run_dir(work, name), target / _run_dir(work, name).name)
    return firsts


def _facts(out: Path, names: list[str], unread: list[str]) -> dict[str, Any]:
    """Each recording's facts, read once (a diff of repeats takes several); a recording that
    cannot be read is left out, its error appended to ``unread``."""
    import autoprof
    from autoprof.analysis.diff import run_facts

    facts = {}
    for name in names:
        try:
            facts[name] = run_facts(autoprof.load(_run_dir(out, name)))
        except Exception as err:  # one bad recording must not lose the others' results
            unread.append(f"{name}: {type(err).__name__}: {err}")
    return facts


def _judge(a: list[Any], b: list[Any], planted_op: str | None) -> dict[str, Any]:
    from autoprof.analysis.diff import diff_facts

    d = diff_facts(a, b)
    step = d.step
    return {"verdict": d.verdict, "first": d.why[0].name if d.why else "",
            "first_note": d.why[0].note if d.why else "",
            "planted_rank": next((i for i, c in enumerate(d.why) if c.name == planted_op),
                                 None),
            "change_pct": None if step is None else step.change_pct,
            "ci_pct": None if step is None else [step.ci_low_pct, step.ci_high_pct],
            "min_detectable_pct": None if step is None else step.min_detectable_pct,
            "between_run_pct": None if step is None else step.between_run_pct,
            "not_comparable_because": d.comparability.blocking}


def _right(row: dict[str, Any], expected: str, op: str | None) -> bool:
    if expected == "not comparable":  # for the shapes (or the problem size they give)
        reasons = " ".join(row["not_comparable_because"])
        return row["verdict"] == expected and (
            "input shapes" in reasons or "problem size" in reasons)
    if expected == "slower":
        return bool(row["verdict"] == "slower" and row["first"] == op)
    return bool(row["verdict"] == expected)


def _case(rows: list[dict[str, Any]], what: str, expected: str,
          op: str | None) -> dict[str, Any]:
    changes = [r["change_pct"] for r in rows if r["change_pct"] is not None]
    detectable = [r["min_detectable_pct"] for r in rows if r["min_detectable_pct"] is not None]
    return {"what": what, "expected": expected, "planted_op": op, "n": len(rows),
            "right": sum(_right(r, expected, op) for r in rows),
            "cause_first": sum(op is not None and r["first"] == op for r in rows),
            "verdicts": {v: sum(r["verdict"] == v for r in rows)
                         for v in sorted({r["verdict"] for r in rows})},
            "median_change_pct": statistics.median(changes) if changes else None,
            "median_min_detectable_pct": statistics.median(detectable) if detectable else None,
            "rows": rows}


def _cases(facts: dict[str, Any], device: str, group: int) -> dict[str, Any]:
    """Every case judged with ``group`` recordings a side (1: each recording alone)."""
    def side(picked: list[str]) -> list[Any]:
        return [facts[n] for n in picked]

    names = sorted(facts)
    a = sorted(n for n in names if n.startswith("same_a"))
    b = sorted(n for n in names if n.startswith("same_b"))
    chunks = [(a[i:i + group], b[i:i + group]) for i in range(0, min(len(a), len(b)), group)
              if len(a[i:i + group]) == group == len(b[i:i + group])]
    same = [_judge(side(ca), side(cb), None) for ca, cb in chunks]
    results = {"same": _case(same, "same program", "no significant change", None)}
    for k, (variant, (op, _, expected, what)) in enumerate(PLANTED[device].items()):
        runs = sorted(n for n in names if n.startswith(f"{variant}_"))
        groups = [runs[i:i + group] for i in range(0, len(runs) - group + 1, group)]
        rows = [_judge(side(chunks[(j + k) % len(chunks)][0]), side(g), op)
                for j, g in enumerate(groups)] if chunks else []
        results[variant] = _case(rows, what, expected, op)
    return results


def evaluate(out: Path, device: str) -> dict[str, Any]:
    unread: list[str] = []
    facts = _facts(out, sorted(p.name for p in out.iterdir() if p.is_dir()), unread)
    return {"unread": unread, "one_run_a_side": _cases(facts, device, 1),
            f"{REPEATS}_runs_a_side": _cases(facts, device, REPEATS)}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def table(results: dict[str, Any]) -> str:
    lines = ["| judged on | case | n | expected | right | planted op first (any verdict) | "
             "verdicts | median change | median min. detectable |",
             "| --- | --- | ---: | --- | ---: | ---: | --- | ---: | ---: |"]
    for judged, cases in results.items():
        if judged == "unread":
            continue
        for case in cases.values():
            expected = case["expected"] + (f", {case['planted_op']} first"
                                           if case["expected"] == "slower" else "")
            verdicts = ", ".join(f"{v} {n}" for v, n in case["verdicts"].items())
            detectable = case["median_min_detectable_pct"]
            lines.append(f"| {judged.replace('_', ' ')} | {case['what']} | {case['n']} | "
                         f"{expected} | {case['right']} | "
                         f"{case['cause_first'] if case['planted_op'] else ''} | {verdicts} | "
                         f"{_pct(case['median_change_pct'])} | "
                         f"{'n/a' if detectable is None else f'{detectable:.1f}%'} |")
    return "\n".join(lines)


def _machine(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"device": device, "torch": torch.__version__,
                            "python": platform.python_version(), "cpus": os.cpu_count(),
                            "load_average": list(os.getloadavg())}
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True,
                        help="results.json and kept/ (the first recordings) go here")
    parser.add_argument("--work", type=Path, default=None,
                        help="the recordings (default: a temporary folder, removed after)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--planted", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1, help="recordings at once")
    parser.add_argument("--budget-s", type=float, default=300.0,
                        help="start no recording that would end past this many seconds")
    parser.add_argument("--evaluate", action="store_true", help="only diff what --work holds")
    return parser


def main() -> int:
    args = _parser().parse_args()
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="diffval-"))
    work.mkdir(parents=True, exist_ok=True)
    meta_path = work / "recording.json"
    try:
        if not args.evaluate:
            meta = {"machine_at_start": _machine(args.device),
                    **record(work, args.device, args.pairs, args.planted, args.jobs,
                             args.budget_s, started)}
            meta["load_average_at_end"] = list(os.getloadavg())
            meta_path.write_text(json.dumps(meta, indent=1))
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        names = sorted(p.name for p in work.iterdir() if p.is_dir())
        evaluated = time.monotonic()
        results = evaluate(work, args.device)
        meta["kept"] = keep(work, args.out, names)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    (args.out / "results.json").write_text(json.dumps(
        {"recording": meta, "evaluate_s": round(time.monotonic() - evaluated, 1),
         "total_s": round(time.monotonic() - started, 1), **results}, indent=1))
    print(json.dumps({k: v for k, v in meta.items() if k not in ("tanh_elements", "kept")}))
    print(table(results))
    for line in meta.get("failed", []) + results["unread"]:
        print("not in the table:", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
