"""Record one workload as its user would: the baseline's function under ``@autoprof``.

    PYTHONPATH=. python benchmarks/gpu/truth/record.py --workload NAME --out DIR \\
        [--device cpu --tiny] [--profiler-warmup 2]

The user's loop (``for batch in batches: step(batch)``) runs ``WARMUP_CALLS`` untraced calls,
then the schedule wait 1, warm-up 1, active 3 (``--profiler-warmup 2``: two warm-up steps,
the first of them autoprof's source-lines step, as in autoprof's default schedule), then
``AFTER_CALLS`` more untraced calls, then as many as autoprof's block of calls timed back
to back takes (where the process uses CUDA). The run folder lands in
``DIR/runs/NAME/<run_id>/``;
``DIR/record.json`` holds every iteration's time in this process (host clock and, on CUDA,
events at iteration starts), labelled with its schedule phase, the manifest's warm-up and
wait-step call times, and the profiled steps' durations read from the trace: the profiler's
distortion, in one place.

With ``--same-process-truth`` the baseline and every fix are then timed in this same process,
after autoprof's window (the profiler stopped, CUPTI let go), as ``ground_truth.py`` times
them in a fresh one (``record.json``'s ``same_process_truth``, its form): a judge whose host
runs at the recording's own pace, for predictions that pace the host to this process's
untraced calls (``same_process.py``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from common import Ctx, sync  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

import autoprof  # noqa: E402
from autoprof.record.session import State  # noqa: E402
from autoprof.record.session.after_window import AFTER_WINDOW_CALLS, PACE_MAX_CALLS  # noqa: E402

WARMUP_CALLS = 5
SCHEDULE = {"wait": 1, "warmup": 1, "active": 3}
AFTER_CALLS = AFTER_WINDOW_CALLS  # untraced calls after the window, each timed by autoprof


def phases(profiler_warmup: int) -> list[str]:
    """Each iteration's phase, in order."""
    return (["warmup"] * WARMUP_CALLS + ["wait"] + ["profiler_warmup"] * profiler_warmup
            + ["active"] * SCHEDULE["active"] + ["after"] * AFTER_CALLS)


def _profiler_steps_ms(run_dir: Path) -> list[float]:
    """Durations of the trace's ProfilerStep#N spans (ms), in order."""
    steps: list[tuple[float, float]] = []
    for trace in sorted(run_dir.glob("*.pt.trace.json*")):
        opener = gzip.open if trace.suffix == ".gz" else open
        with opener(trace, "rt") as fh:
            data = json.load(fh)
        for ev in data.get("traceEvents", []):
            if ev.get("ph") == "X" and str(ev.get("name", "")).startswith("ProfilerStep#"):
                steps.append((float(ev["ts"]), float(ev["dur"]) / 1e3))
    return [dur for _, dur in sorted(steps)]


def _by_phase(values: list[float], names: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for phase, value in zip(names, values, strict=False):
        out.setdefault(phase, []).append(value)
    return out


def record(name: str, out: Path, ctx: Ctx, profiler_warmup: int = SCHEDULE["warmup"]
           ) -> dict[str, Any]:
    variant = WORKLOADS[name].build(ctx)["baseline"]()
    schedule = {**SCHEDULE, "warmup": profiler_warmup}
    names = phases(profiler_warmup)
    step = autoprof.autoprof(name=name, warmup=WARMUP_CALLS, schedule=schedule,
                             out_dir=str(out / "runs"))(variant.call)
    starts: list[float] = []
    events = ([torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
               for _ in range(len(names) + 1)] if ctx.cuda else [])
    sync(ctx)
    for i in range(len(names)):  # for batch in loader: step(batch)
        starts.append(time.perf_counter())
        if events:
            events[i].record()
        batch = next(variant.batches)
        step(batch)
    starts.append(time.perf_counter())
    if events:
        events[-1].record()
    sync(ctx)
    # then the loop goes on while autoprof times its block of calls back to back (the
    # untraced iteration, where the process uses CUDA), untimed here
    session = step.autoprof_session  # type: ignore[attr-defined]
    for _ in range(PACE_MAX_CALLS + 1):
        if session.state is not State.AFTER:
            break
        step(next(variant.batches))
    sync(ctx)
    autoprof.flush()
    host_ms = [(b - a) * 1e3 for a, b in zip(starts, starts[1:], strict=False)]
    event_ms = [a.elapsed_time(b) for a, b in zip(events, events[1:], strict=False)]
    manifests = sorted((out / "runs" / name).glob("*/manifest.json"))
    manifest = json.loads(manifests[-1].read_text()) if manifests else {}
    run_dir = manifests[-1].parent if manifests else None
    profiled = _profiler_steps_ms(run_dir) if run_dir else []
    warm = manifest.get("warmup_call_ms") or []
    result = {
        "workload": name,
        "autoprof_file": autoprof.__file__,
        "run": str(run_dir.relative_to(out)) if run_dir else None,
        "status": manifest.get("status"),
        "schedule": schedule, "warmup_calls": WARMUP_CALLS, "after_calls": AFTER_CALLS,
        "phases": names,
        "iteration_host_ms": host_ms,
        "iteration_event_ms": event_ms or None,
        "iteration_ms_by_phase": _by_phase(event_ms or host_ms, names),
        "manifest_warmup_call_ms": warm,
        "manifest_wait_call_ms": manifest.get("wait_call_ms") or [],
        "profiled_step_ms": profiled,
        "untraced_call_ms_median": statistics.median(warm[1:]) if len(warm) > 1 else None,
        "profiled_step_ms_median": statistics.median(profiled) if profiled else None,
    }
    if result["untraced_call_ms_median"] and result["profiled_step_ms_median"]:
        result["profiled_over_untraced"] = (result["profiled_step_ms_median"]
                                            / result["untraced_call_ms_median"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (CPU smoke test)")
    parser.add_argument("--profiler-warmup", type=int, default=SCHEDULE["warmup"],
                        help="warm-up steps (2: the first is autoprof's source-lines step)")
    parser.add_argument("--same-process-truth", action="store_true",
                        help="then time the baseline and every fix in this process")
    parser.add_argument("--rounds", type=int, default=4, help="with --same-process-truth")
    parser.add_argument("--block-s", type=float, default=0.25, help="with --same-process-truth")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(args.device, args.tiny or args.device == "cpu")
    result = record(args.workload, args.out, ctx, args.profiler_warmup)
    if args.same_process_truth:
        from ground_truth import measure

        result["same_process_truth"] = measure(args.workload, ctx, args.rounds, args.block_s,
                                               isolate=WORKLOADS[args.workload].isolate)
    (args.out / "record.json").write_text(json.dumps(result, indent=1))
    print(f"{args.workload}: {result['status']} run {result['run']}; untraced call "
          f"{result['untraced_call_ms_median']} ms, "
          f"profiled step {result['profiled_step_ms_median']} ms")


if __name__ == "__main__":
    main()
