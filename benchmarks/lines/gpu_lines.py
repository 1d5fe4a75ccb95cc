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

import pandas as pd

import autoprof
from autoprof.analysis.metrics.lines import find_lines_files
from autoprof.analysis.metrics.lines.trace import read_lines_file

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs.py"
ACTIVE = 3  # programs.ACTIVE (not imported: that imports torch)
# compiled last: the slowest
CASES = ("sync", "loader", "slow_op", "cuda_graph", "backward", "reduce_overhead", "compiled")
CASE_TIMEOUT_S = 240


def marker(name: str) -> int:
    for number, text in enumerate(PROGRAMS.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# LINE: {name}"):
            return number
    raise KeyError(name)


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


def _line_no(source: str) -> int:
    where = source.partition(" (")[0]
    tail = where.rpartition(":")[2]
    return int(tail) if tail.isdigit() else -1


def _in_programs(source: str) -> bool:
    return source.partition(" (")[0].rpartition(":")[0].endswith("programs.py")


def rows_with_lines(run: Any) -> pd.DataFrame:
    """The run's events with the ``source`` of each attributed row ("" when none)."""
    events = run.events
    rows = run.analysis.source_lines.attribution.rows
    source = rows["source"].reindex(events.index).fillna("")
    return events.assign(source=source.to_numpy())


def _gpu(events: pd.DataFrame) -> pd.DataFrame:
    return events[events["is_gpu_work"].to_numpy(dtype=bool) & (events["step"] >= 0).to_numpy()]


def _line_share(rows: pd.DataFrame, line: int, column: str = "dur_us") -> float:
    total = float(rows[column].sum())
    named = rows[[_in_programs(s) and _line_no(s) == line for s in rows["source"]]]
    return round(100.0 * float(named[column].sum()) / total, 2) if total > 0 else 0.0


def check_sync(run: Any, events: pd.DataFrame) -> dict[str, Any]:
    table = run.analysis.source_lines.by_line
    want = marker("sync")
    if table.empty or float(table["sync_us"].max()) <= 0:
        return {"ok": False, "expected_line": want, "why": "no line holds a host sync"}
    top = table.loc[table["sync_us"].idxmax()]
    return {"ok": int(top["line"]) == want, "expected_line": want, "named": str(top["source"]),
            "sync_us_per_step": round(float(top["sync_us"]), 1),
            "syncs_per_step": float(top["syncs"])}


def check_loader(run: Any, events: pd.DataFrame) -> dict[str, Any]:
    want = marker("loader")
    ops = events[(events["cat"] == "cpu_op") & events["name"].isin(["aten::stack", "aten::cat"])
                 & (events["step"] >= 0)]
    named = sorted(set(ops["source"]))
    ok = bool(len(ops)) and all(_line_no(s) == want for s in ops["source"])
    return {"ok": ok, "expected_line": want, "named": named, "collate_ops": int(len(ops))}


def check_slow_op(run: Any, events: pd.DataFrame) -> dict[str, Any]:
    table = run.analysis.source_lines.by_line
    want = marker("slow_op")
    column = "gpu_us" if run.is_cuda else "self_cpu_us"
    if table.empty:
        return {"ok": False, "expected_line": want, "why": "no lines"}
    top = table.loc[table[column].idxmax()]
    return {"ok": int(top["line"]) == want, "expected_line": want, "named": str(top["source"]),
            "by": column, "us_per_step": round(float(top[column]), 1)}


def _compiled_forward_lines() -> set[int]:
    """The lines of the compiled MLP's forward, which inductor's provenance names."""
    return {marker("compiled_gelu"), marker("compiled_out")}


def check_compiled(run: Any, events: pd.DataFrame) -> dict[str, Any]:
    call, forward = marker("compiled_call"), _compiled_forward_lines()
    gpu = _gpu(events)
    kernels = gpu[gpu["name"].astype(str).str.startswith(("triton_", "cpp_"))]
    column = "dur_us"  # GPU kernels: their time on the device
    if kernels.empty:  # CPU: inductor's C++ kernels are not in the trace; its ATen calls are
        kernels, column = events[(events["cat"] == "cpu_op") & (events["step"] >= 0)], "self_us"
    total = float(kernels[column].sum())
    lines = [_line_no(s) if _in_programs(s) else -1 for s in kernels["source"]]
    on_forward = float(kernels[column][[n in forward for n in lines]].sum())
    on_call = float(kernels[column][[n == call for n in lines]].sum())

    def pct(us: float) -> float:
        return round(100.0 * us / total, 2) if total > 0 else 0.0

    traces = [read_lines_file(p) for p in find_lines_files(run.path).values()]
    kept = {k: v for t in traces for g in t.kernels.values() for k, v in g.items()}
    return {"ok": total > 0 and pct(on_forward + on_call) >= 95.0,
            "provenance_kernels": kept,  # what inductor kept, as the lines trace holds it
            "expected_lines": sorted(forward | {call}), "kernels": int(len(kernels)),
            "kernel_names": sorted(set(kernels["name"].astype(str)))[:20],
            "by": column, "forward_lines_pct": pct(on_forward), "call_line_pct": pct(on_call),
            "named": sorted(set(kernels["source"]))[:10]}


def check_cuda_graph(run: Any, events: pd.DataFrame) -> dict[str, Any]:
    want = marker("graph_replay")
    names = events["name"].astype(str)
    gpu = _gpu(events)
    launches = gpu["launch_row"].map(lambda r: str(names.get(r, "")) if r >= 0 else "")
    replayed = gpu[launches.isin(["cudaGraphLaunch", "cuGraphLaunch"]).to_numpy()]
    return {"ok": bool(len(replayed)) and _line_share(replayed, want) >= 95.0,
            "expected_line": want, "replayed_kernels": int(len(replayed)),
            "replay_line_pct": _line_share(replayed, want) if len(replayed) else 0.0,
            "named": sorted(set(replayed["source"]))[:10]}


def check_reduce_overhead(run: Any, events: pd.DataFrame) -> dict[str, Any]:
    """The kernels of the compiled graph's replays take the line that calls the module, or,
    where inductor's provenance names one, the line of the compiled forward they came from
    (on CPU, with no CUDA graph and no kernel: the ops' self time)."""
    want = marker("ro_call")
    forward = _compiled_forward_lines()
    rows, column = _gpu(events), "dur_us"
    if rows.empty:
        rows = events[(events["cat"] == "cpu_op") & (events["step"] >= 0)]
        column = "self_us"
    on_call = _line_share(rows, want, column)
    on_forward = round(sum(_line_share(rows, line, column) for line in forward), 2)
    return {"ok": bool(len(rows)) and on_call + on_forward >= 95.0, "expected_line": want,
            "forward_lines": sorted(forward), "by": column,
            "kernels": int(len(rows)) if column == "dur_us" else 0, "ops": int(len(rows)),
            "call_line_pct": on_call, "forward_lines_pct": on_forward,
            "named": sorted(set(rows["source"]))[:10]}


def check_backward(run: Any, events: pd.DataFrame) -> dict[str, Any]:
    """Backward's kernels (launched off the main thread on a GPU) take the lines of the
    forward ops that recorded them; every kernel of the step has a line of the program."""
    forward = {marker("compiled_gelu"), marker("compiled_out"), marker("bw_loss")}
    gpu = _gpu(events)
    threads = events["tid"].reindex(gpu["launch_row"].clip(lower=0)).to_numpy()
    main = events.loc[events["name"].astype(str).str.startswith("ProfilerStep#"),
                      "tid"].iloc[0]
    off_main = gpu[(threads != main) & (gpu["launch_row"] >= 0).to_numpy()]
    on_forward = sum(_line_share(off_main, n) for n in forward) if len(off_main) else 0.0
    in_program = round(100.0 * float(gpu["dur_us"][[_in_programs(s) for s in gpu["source"]]]
                                     .sum()) / max(float(gpu["dur_us"].sum()), 1e-9), 2)
    return {"ok": bool(len(off_main)) and on_forward >= 90.0 and in_program >= 95.0,
            "expected_lines": sorted(forward), "backward_kernels": int(len(off_main)),
            "backward_forward_lines_pct": round(on_forward, 2), "program_lines_pct": in_program,
            "named": sorted(set(off_main["source"]))[:10]}


CHECKS = {"sync": check_sync, "loader": check_loader, "slow_op": check_slow_op,
          "compiled": check_compiled, "cuda_graph": check_cuda_graph,
          "reduce_overhead": check_reduce_overhead, "backward": check_backward}


def counts(events: pd.DataFrame) -> dict[str, int]:
    """Calls of each op name and launches of each kernel name in the measured steps."""
    keep = (((events["cat"] == "cpu_op") | events["is_gpu_work"].astype(bool))
            & (events["step"] >= 0))
    return {str(k): int(v) for k, v in events[keep]["name"].astype(str).value_counts().items()}


def count_check(run_on: Any, run_off: Any | None) -> dict[str, Any]:
    """Every op's and kernel's count a multiple of ACTIVE, the same per step, the same with
    lines on and off; no row of the run outside its steps from the lines trace."""
    on = counts(run_on.events)
    per_step = run_on.events[run_on.events["step"] >= 0].groupby("step").size()
    out: dict[str, Any] = {
        "steps": sorted(int(s) for s in per_step.index),
        "not_multiple_of_active": {k: v for k, v in on.items() if v % ACTIVE},
        "python_function_rows": int((run_on.events["cat"] == "python_function").sum())}
    if run_off is not None:
        off = counts(run_off.events)
        out["differ_on_off"] = {k: [on.get(k, 0), off.get(k, 0)] for k in sorted(set(on) | set(off))
                                if on.get(k, 0) != off.get(k, 0)}
    out["ok"] = (len(out["steps"]) == ACTIVE and not out["not_multiple_of_active"]
                 and not out["python_function_rows"] and not out.get("differ_on_off"))
    return out


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
