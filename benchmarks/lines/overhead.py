"""Source lines: what the lines step costs the measured steps, and how much op self time
gets a line (docs/lines.md).

Each workload is recorded ``--repeats`` times with ``source_lines=True`` and with
``source_lines=False``, interleaved in one process (the same machine load for both; the
order alternates per repeat), each a fresh ``@autoprof`` session with ``active=5``.
Reported per workload, side by side:

- ``ratio``: the median over repeats of (median measured step with lines) / (median
  measured step without) of the same repeat (the two runs recorded next to each other),
  with its range over the repeats;
- ``noise_ratio``: the same ratio between the runs *without* lines of consecutive repeats
  (no difference but time): a ``ratio`` inside its range is within noise;
- ``cpu_ratio`` / ``cpu_noise_ratio``: the same with the CPU time of the active calls
  (``time.thread_time_ns`` around the user's function: its own work plus the profiler's on
  its thread, not the time other processes held the cores), the least load-sensitive;
- ``fastest_ratio`` / ``fastest_noise_ratio``: the same with each run's fastest measured
  step instead of its median (on a loaded machine the fastest step is the one nobody else's
  work preempted: the closest to the uncontended cost);
- ``match_pct``: the share of the steps' op self time attributed to a line (the lowest of
  the runs with lines).

    python benchmarks/lines/overhead.py --out /tmp/lines_bench [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import autoprof
from autoprof import autoprof as profile

SCHEDULE = {"wait": 1, "warmup": 2, "active": 5}  # the lines step, then torch's warm-up
CALLS = 2 + 1 + 2 + 5  # warm-up calls, wait, warmup, active


def mlp() -> Callable[[], Any]:
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.Linear(512, 256))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)

    def step() -> float:
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return float(loss.item())

    return step


def transformer() -> Callable[[], Any]:
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    x = torch.randn(8, 32, 128)

    def step() -> float:
        with torch.no_grad():
            return float(model(x).sum().item())

    return step


def small_ops() -> Callable[[], Any]:
    """Many tiny ops from a Python loop: the case where per-op overhead matters most."""
    x = torch.randn(16)

    def step() -> float:
        acc = torch.zeros(16)
        for i in range(200):
            acc = acc + x * i
        return float(acc.sum().item())

    return step


WORKLOADS: dict[str, Callable[[], Callable[[], Any]]] = {
    "mlp_train": mlp, "transformer_infer": transformer, "small_ops_loop": small_ops}


def record(out: Path, name: str, fn: Callable[[], Any], lines: bool) -> tuple[Path, list[float]]:
    """The run folder, and the CPU time (this thread's, µs) of each active call."""
    cpu_us: list[float] = []

    def timed() -> Any:
        started_ns = time.thread_time_ns()
        try:
            return fn()
        finally:
            cpu_us.append((time.thread_time_ns() - started_ns) / 1000)

    wrapped: Any = profile(name=name, out_dir=str(out), warmup_calls=2, schedule=SCHEDULE,
                           source_lines=lines)(timed)
    for _ in range(CALLS):
        wrapped()
    wrapped.autoprof_session.flush()
    (run_dir,) = sorted((out / name).iterdir())
    return run_dir, cpu_us[-SCHEDULE["active"]:]


def measure(run_dir: Path) -> tuple[list[float], float | None]:
    run = autoprof.load(run_dir)
    steps = run.analysis.breakdown.steps
    lines = run.analysis.source_lines
    return ([float(v) for v in steps["step_us"]],
            lines.attribution.match_pct if lines.available else None)


def _quartiles(values: list[float]) -> list[float]:
    q = statistics.quantiles(values, n=4)
    return [round(q[0], 1), round(q[2], 1)]


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def _paired(per_run: dict[bool, list[float]]) -> list[float]:
    """with / without, of the two runs of each repeat."""
    return [on / off for on, off in zip(per_run[True], per_run[False], strict=True)]


def _noise(without: list[float]) -> dict[str, float] | None:
    """The same ratio between the runs without lines of consecutive repeats."""
    ratios = [b / a for a, b in zip(without, without[1:], strict=False)]
    return _spread(ratios) if ratios else None


def bench(out: Path, workload: str, fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """One workload's runs with and without lines, interleaved, and their ratios."""
    medians: dict[bool, list[float]] = {True: [], False: []}
    fastest: dict[bool, list[float]] = {True: [], False: []}
    steps: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    match: list[float] = []
    for r in range(repeats):
        for lines in ((False, True) if r % 2 == 0 else (True, False)):
            run_dir, cpu_us = record(out, f"{workload}_{int(lines)}_{r}", fn, lines)
            times, pct = measure(run_dir)
            cpu[lines].append(statistics.median(cpu_us))
            steps[lines] += times
            medians[lines].append(statistics.median(times))
            fastest[lines].append(min(times))
            if pct is not None:
                match.append(pct)
    return {"step_us_without": round(statistics.median(steps[False]), 1),
            "step_us_with": round(statistics.median(steps[True]), 1),
            "ratio": _spread(_paired(medians)), "noise_ratio": _noise(medians[False]),
            "fastest_step_us_without": round(min(steps[False]), 1),
            "fastest_step_us_with": round(min(steps[True]), 1),
            "fastest_ratio": _spread(_paired(fastest)), "fastest_noise_ratio":
                _noise(fastest[False]),
            "cpu_us_without": round(statistics.median(cpu[False]), 1),
            "cpu_us_with": round(statistics.median(cpu[True]), 1),
            "cpu_ratio": _spread(_paired(cpu)), "cpu_noise_ratio": _noise(cpu[False]),
            "quartiles_us_without": _quartiles(steps[False]),
            "quartiles_us_with": _quartiles(steps[True]),
            "match_pct": round(min(match), 2) if match else None,
            "steps_each": len(steps[True]), "repeats": repeats}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    for workload, build in WORKLOADS.items():
        results[workload] = bench(args.out, workload, build(), args.repeats)
        print(workload, json.dumps(results[workload]), flush=True)
    (args.out / "lines_overhead.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
