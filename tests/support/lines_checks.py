"""Where autoprof should name each line of `benchmarks/lines/programs.py`, checked on a run of
it: the checks of `benchmarks/lines/gpu_lines.py` (which records the programs on a GPU and
writes their results) and of tests/analysis/lines/test_lines_h200.py (which applies them to
the runs recorded on an H200, `tests/data/gpu_h200_lines/`). Each check returns its numbers
and ``ok``; the lines are found by their ``# LINE: name`` markers in the programs' source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from autoprof.analysis.metrics.lines import find_lines_files
from autoprof.analysis.metrics.lines.trace import read_lines_file

PROGRAMS = Path(__file__).resolve().parents[2] / "benchmarks" / "lines" / "programs.py"
ACTIVE = 3  # programs.ACTIVE (not imported: that imports torch)


def marker(name: str) -> int:
    for number, text in enumerate(PROGRAMS.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# LINE: {name}"):
            return number
    raise KeyError(name)


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
