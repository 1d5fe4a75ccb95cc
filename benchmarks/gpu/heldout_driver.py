"""The held-out driver: time a program and its fixes by hand, record it with autoprof, compare.

Shared by ``benchmarks/cpu_heldout.py`` (CPU programs, ``time.perf_counter``) and
``benchmarks/gpu/heldout_cases.py`` (GPU programs, CUDA events). A case is a small program
with one known performance bug, written as code strings so that every measurement is a
**fresh process**:

- ``about``: the program and its bug, in a sentence;
- ``setup``: builds the state; may read ``DEVICE``, ``CUDA``, ``DRY`` (tiny sizes) and
  ``FIXED`` (the fix's label, ``None`` for the program as written);
- ``base``: one iteration as the bug has it;
- ``fixes``: label -> ``about``, ``code`` (the fixed iteration; absent: ``base`` again, the
  fix lives in ``setup``) and ``match`` (words that name this fix in autoprof's advice);
- ``timing``: optional ``warmup`` / ``blocks`` / ``iters`` for this case.

``measure`` runs rounds; each round runs every case's program and each fix in its own process,
interleaved (so a drift of a shared machine touches them alike), none of them importing
autoprof. Each process times ``blocks`` blocks of ``iters`` iterations after ``warmup``
iterations and reports the median ms per iteration. After the first round each program as
written is recorded once with ``@autoprof`` (its defaults) in a process of its own. The truth
is the median over rounds of the per-round ratio program / fix, with its spread.

``compare`` reads each recorded run's summary (the predictions) and sets it beside the truth:
is the best measured fix offered, is it ranked first, does its measured gain lie in the
stated interval.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Case = dict[str, Any]

HEADER = """
import json, os, statistics, sys, time
import torch
DEVICE = {device!r}
CUDA = DEVICE == 'cuda'
DRY = {dry!r}
FIXED = {fixed!r}
def sync():
    if CUDA:
        torch.cuda.synchronize()
"""

TIMER = """
{setup}
def body():
{body}
for _ in range({warmup}):
    body()
sync()
blocks = []
for _ in range({blocks}):
    if CUDA:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    else:
        t0 = time.perf_counter()
    for _ in range({iters}):
        body()
    if CUDA:
        end.record()
        end.synchronize()
        blocks.append(start.elapsed_time(end) / {iters})
    else:
        blocks.append((time.perf_counter() - t0) * 1e3 / {iters})
print(json.dumps({{"ms_per_iter": statistics.median(blocks), "blocks_ms": blocks,
                  "intra_op_threads": torch.get_num_threads(),
                  "profiler_free": "autoprof" not in sys.modules}}))
"""

RECORD = """
from autoprof import autoprof
{setup}
@autoprof(name={name!r})
def body():
{body}
for _ in range({cuda_calls} if CUDA else {calls}):
    body()
sync()
import autoprof as _ap
_ap.flush()
print(json.dumps({{"recorded": True}}))
"""

DEFAULT_TIMING = {"warmup": 10, "blocks": 5, "iters": 20}
DRY_TIMING = {"warmup": 1, "blocks": 1, "iters": 2}


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.strip().splitlines())


def _body(case: Case, fix: str | None) -> str:
    code = case["fixes"][fix].get("code") if fix else None
    return str(code or case["base"])


def timer_code(case: Case, fix: str | None, device: str, dry: bool) -> str:
    """The program of one timing process: header, setup, the loop of timed blocks."""
    timing = DRY_TIMING if dry else {**DEFAULT_TIMING, **case.get("timing", {})}
    return HEADER.format(device=device, dry=dry, fixed=fix) + TIMER.format(
        setup=case["setup"], body=_indent(_body(case, fix)), **timing)


def record_code(name: str, case: Case, device: str, dry: bool, calls: int) -> str:
    """The program of the recording process: the program as written under ``@autoprof``,
    called `calls` times; on a GPU, as many times as a timing process calls it where that is
    more (`timing_calls`), as a long loop would: enough calls after the window for autoprof
    to time its untraced iterations as one block (`after_window_iter_ms`, the pace its
    predictions take), which 20 calls leave no room for."""
    return HEADER.format(device=device, dry=dry, fixed=None) + RECORD.format(
        setup=case["setup"], name=name, body=_indent(case["base"]), calls=calls,
        cuda_calls=max(calls, timing_calls(case)))


def timing_calls(case: Case) -> int:
    """How many times a timing process calls the program (warm-up and timed blocks): every
    program is written to run at least that long."""
    timing = {**DEFAULT_TIMING, **case.get("timing", {})}
    return int(timing["warmup"]) + int(timing["blocks"]) * int(timing["iters"])


def run_process(code: str, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """One fresh process; its last stdout line as JSON, or an error record."""
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    parsed = _result(lines[-1]) if lines else None
    if parsed is None or (done.returncode != 0 and not _complete(parsed)):
        tail = done.stderr.strip().splitlines()[-3:]
        return {"error": " | ".join(tail) or f"exit status {done.returncode}"}
    if done.returncode != 0:
        # the result was printed whole before the process failed on its way out (a gloo
        # process group torn down by the interpreter's exit): kept, with the status
        parsed["exit_status"] = done.returncode
    return parsed


def _result(line: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _complete(parsed: dict[str, Any]) -> bool:
    """A timing or a recording that the process finished before it exited."""
    return "ms_per_iter" in parsed or parsed.get("recorded") is True


def timing_env() -> dict[str, str]:
    """The environment of a timing process: no AUTOPROF_* knob reaches it."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AUTOPROF")}


def _sides(case: Case) -> list[str | None]:
    return [None, *case["fixes"]]


def time_round(cases: dict[str, Case], opts: dict[str, Any], results: dict[str, Any],
               after: Callable[[str], None] = lambda name: None) -> None:
    """One round: every case's program and each fix, each in a fresh process, interleaved;
    ``after(name)`` once a case's processes have run (the first round records it there and
    the truth is written, so a call cut short keeps every case it reached)."""
    env = timing_env()
    for name, case in cases.items():
        for fix in _sides(case):
            code = timer_code(case, fix, opts["device"], opts["dry"])
            got = run_process(code, env, opts["timeout_s"])
            results[name]["rounds"][fix or "as_written"].append(got)
            print(f"  {name:24s} {fix or 'as written':16s} "
                  f"{got.get('ms_per_iter', got.get('error'))}", flush=True)
        after(name)


def record(cases: dict[str, Case], opts: dict[str, Any], out: Path,
           results: dict[str, Any]) -> None:
    """Each program as written, recorded once with ``@autoprof``'s defaults."""
    env = {**os.environ, "AUTOPROF_DIR": str(out / "runs")}
    for name, case in cases.items():
        started = time.monotonic()
        got = run_process(record_code(name, case, opts["device"], opts["dry"],
                                      opts["record_calls"]), env, opts["timeout_s"] * 3)
        folders = sorted(p.parent for p in (out / "runs" / name).glob("*/manifest.json"))
        results[name]["record"] = {
            "run": str(folders[-1].relative_to(out)) if folders else None,
            "error": got.get("error"), "wall_s": round(time.monotonic() - started, 1)}
        print(f"  recorded {name}: {results[name]['record']}", flush=True)


def _ms(rows: list[dict[str, Any]]) -> list[float]:
    return [float(r["ms_per_iter"]) for r in rows if "ms_per_iter" in r]


def fix_truth(base: list[float], fixed: list[float]) -> dict[str, Any]:
    """Measured speed-up of one fix: the median of the rounds' ratios, with their spread."""
    ratios = [b / f for b, f in zip(base, fixed, strict=False) if f > 0]
    return {"ms_median": statistics.median(fixed) if fixed else None,
            "speedup": statistics.median(ratios) if ratios else None,
            "speedup_min": min(ratios) if ratios else None,
            "speedup_max": max(ratios) if ratios else None,
            "speedup_per_round": [round(r, 4) for r in ratios]}


def summarise(results: dict[str, Any]) -> None:
    """Per case: each fix's measured speed-up and the best fix by hand."""
    for entry in results.values():
        base = _ms(entry["rounds"]["as_written"])
        entry["as_written_ms_median"] = statistics.median(base) if base else None
        for label in entry["fixes"]:
            entry["fixes"][label].update(fix_truth(base, _ms(entry["rounds"][label])))
        entry["best_fix"] = best_fix(entry["fixes"])


def best_fix(fixes: dict[str, Any]) -> str | None:
    """The label of the fix measured fastest, or None when none has a speed-up."""
    measured = {k: v["speedup"] for k, v in fixes.items() if v.get("speedup")}
    return max(measured, key=measured.__getitem__) if measured else None


def _new_results(cases: dict[str, Case]) -> dict[str, Any]:
    return {name: {"about": case["about"], "timing": {**DEFAULT_TIMING, **case.get("timing", {})},
                   "fixes": {k: {"about": v["about"], "match": v["match"]}
                             for k, v in case["fixes"].items()},
                   "rounds": {side or "as_written": [] for side in _sides(case)}}
            for name, case in cases.items()}


def machine(device: str) -> dict[str, Any]:
    """Where and when: device, torch, CPUs, load average, date (UTC)."""
    import torch

    info: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor()
        or platform.machine(),
        "torch": torch.__version__, "python": platform.python_version(),
        "cpus": len(os.sched_getaffinity(0)), "loadavg": [round(x, 2) for x in os.getloadavg()],
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    return info


def _write(out: Path, results: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    summarise(results)
    truth = {"meta": meta, "cases": results}
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    return truth


def measure(cases: dict[str, Case], opts: dict[str, Any]) -> dict[str, Any]:
    """Rounds of interleaved timing (the first always, more while ``budget_s`` allows), the
    recordings in the first round, each program's right after its timing; writes
    ``OUT/truth.json`` after every program of every round (so a call cut short keeps every
    program it reached) and returns it. ``meta["rounds"]`` counts the rounds begun: in the
    last one a program not reached has one timing fewer, which ``fix_truth`` pairs away."""
    out = Path(opts["out"])
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results, meta = _new_results(cases), {
        "machine_start": machine(opts["device"]), "dry_run": opts["dry"],
        "timing": DRY_TIMING if opts["dry"] else DEFAULT_TIMING,
        "clock": "CUDA events" if opts["device"] == "cuda" else "time.perf_counter"}
    if (opts.get("resume") or opts.get("record_only")) and (out / "truth.json").exists():
        before = json.loads((out / "truth.json").read_text())
        results, meta = before["cases"], before["meta"] | {"resumed": True}
    if opts.get("record_only"):  # the recordings of a call whose runs did not come back
        record(cases, opts, out, results)
        return _write(out, results, meta | {"recorded_apart": True})
    done, wall_before_s = int(meta.get("rounds", 0)), float(meta.get("wall_s", 0.0))
    rounds, per_round_s = done, 0.0
    while rounds < done + opts["rounds"] and (rounds == done or time.monotonic() - started
                                              + per_round_s < opts["budget_s"]):
        rounds += 1
        print(f"round {rounds}", flush=True)
        round_started = time.monotonic()
        recording = rounds == 1 and opts["record"] and not done

        def after(name: str, number: int = rounds, recording: bool = recording) -> None:
            if recording:  # timed and recorded together: a cut call keeps whole cases
                record({name: cases[name]}, opts, out, results)
            meta.update(rounds=number, machine_end=machine(opts["device"]),
                        wall_s=round(wall_before_s + time.monotonic() - started, 1))
            _write(out, results, meta)

        time_round(cases, opts, results, after)
        # a later round times again and records nothing: the recordings' time is not its own
        recorded_s = sum(results[n]["record"]["wall_s"] for n in cases) if recording else 0.0
        per_round_s = time.monotonic() - round_started - recorded_s
    for name, entry in results.items():
        gains = ", ".join(f"{k} {v['speedup']:.2f}x" if v["speedup"] else f"{k} n/a"
                          for k, v in entry["fixes"].items())
        print(f"{name:24s} {gains}")
    return _write(out, results, meta)
