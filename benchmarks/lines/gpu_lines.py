"""Source lines on a GPU: record the programs of ``programs.py`` (one process each, with
``source_lines`` on and off) and check that autoprof names the right line for each:

- ``sync``: the line of the ``.item()`` holds the steps' host syncs;
- ``loader``: the DataLoader's collate ops (between the calls) take the caller's loop line;
- ``slow_op``: the line of the big matmul launches the most GPU work;
- ``compiled``: the torch.compile'd MLP's kernels take its lines (the forward's lines where
  inductor's provenance is on, ``INDUCTOR_PROVENANCE=1``, else the line that calls it);
- ``cuda_graph``: the kernels of a CUDA-graph replay take the ``graph.replay()`` line;
- ``reduce_overhead``: a ``mode="reduce-overhead"`` compiled MLP's replayed kernels take the
  line that calls it, or the compiled forward's line where inductor's provenance names one
  (on CPU, where inductor skips the CUDA graphs, its ops);
- ``backward``: a training step's backward kernels (launched from autograd's device thread
  on a GPU) take the lines of the forward ops that recorded them;
- every case: each op's and kernel's count in the run is ``ACTIVE`` times its count per
  step, with lines on and off (the lines step never shows in the measured steps), and the
  match rate (share of the steps' op self time with a line).

    PYTHONPATH=. python benchmarks/lines/gpu_lines.py --out /tmp/gpu_lines [--budget-s 330]

Writes ``OUT/results.json`` (the checks and numbers) and ``OUT/runs/{on,off}/CASE/...`` (the
run folders). Runs on CPU too (the CUDA-graph case is then skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import autoprof

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs.py"
sys.path.append(str(HERE.parents[1] / "tests"))  # the checks live with the test support code
from support.lines_checks import ACTIVE, CHECKS, count_check, rows_with_lines  # noqa: E402

# compiled last: the slowest
CASES = ("sync", "loader", "slow_op", "cuda_graph", "backward", "reduce_overhead", "compiled")
CASE_TIMEOUT_S = 240


def record(case: str, out: Path, lines: bool, timeout_s: float) -> dict[str, Any]:
    """Run one program in its own process; its run folder (or why there is none)."""
    folder = out / "runs" / ("on" if lines else "off")
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1])}
    if case in ("compiled", "reduce_overhead"):
        env.setdefault("INDUCTOR_PROVENANCE", "1")  # inductor keeps kernel -> FX node stacks
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(PROGRAMS), case, str(folder),
                               "1" if lines else "0"], env=env, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    seconds = round(time.monotonic() - started, 1)
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}", "stderr": done.stderr[-3000:],
                "seconds": seconds}
    runs = sorted((folder / case).iterdir()) if (folder / case).is_dir() else []
    if not runs:
        return {"error": "no run folder", "stderr": done.stderr[-3000:], "seconds": seconds}
    return {"run_dir": str(runs[-1]), "seconds": seconds}


def one_case(case: str, out: Path, deadline: float, cuda: bool) -> dict[str, Any]:
    if case == "cuda_graph" and not cuda:
        return {"skipped": "needs CUDA"}
    result: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    for lines in (True, False):
        left = deadline - time.monotonic()
        if left < 20:
            result["skipped_" + ("on" if lines else "off")] = "out of time budget"
            continue
        rec = record(case, out, lines, min(CASE_TIMEOUT_S, left))
        result["record_" + ("on" if lines else "off")] = rec
        if "run_dir" in rec:
            runs["on" if lines else "off"] = autoprof.load(rec["run_dir"])
    for key, run in runs.items():  # is the first active step slower with lines on?
        try:
            steps = run.analysis.breakdown.steps
            result["step_us_" + key] = [round(float(v), 1) for v in steps["step_us"]]
        except Exception as exc:
            result["step_us_" + key] = repr(exc)
    run_on = runs.get("on")
    if run_on is None:
        return result
    lines = run_on.analysis.source_lines
    result["match_pct"] = round(lines.attribution.match_pct, 2) if lines.available else None
    result["is_cuda"] = bool(run_on.is_cuda)
    try:
        result["check"] = CHECKS[case](run_on, rows_with_lines(run_on))
        result["counts"] = count_check(run_on, runs.get("off"))
        result["top_lines"] = [
            {k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()
             if k in ("source", "module", "self_cpu_us", "gpu_us", "sync_us", "calls", "top_op")}
            for row in lines.by_line.head(6).to_dict(orient="records")]
    except Exception as exc:  # a check that fails is a result, not a lost run
        result["check_error"] = repr(exc)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=330.0)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + args.budget_s
    probe = subprocess.run([sys.executable, "-c", "import torch, sys; sys.stdout.write("
                            "f'{torch.__version__} {int(torch.cuda.is_available())}')"],
                           capture_output=True, text=True, timeout=120)
    version, _, has_cuda = probe.stdout.partition(" ")
    results: dict[str, Any] = {"torch": version, "cuda": has_cuda == "1", "active": ACTIVE,
                               "cases": {}}
    for case in args.cases.split(","):
        results["cases"][case] = one_case(case, args.out, deadline, has_cuda == "1")
        check = results["cases"][case].get("check", {})
        print(case, "ok" if check.get("ok") else "NOT ok", json.dumps(check)[:300], flush=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    results["seconds"] = round(time.monotonic() - started, 1)
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"wrote {args.out / 'results.json'} in {results['seconds']} s")


if __name__ == "__main__":
    main()
