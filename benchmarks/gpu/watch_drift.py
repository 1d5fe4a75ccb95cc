"""A GPU training loop whose step regresses mid-run, watched with ``@autoprof(watch=True)``.

Each scenario runs in a fresh process: an MLP trained on CUDA, the function decorated with
the defaults (``watch=True``: threshold 20%, 20 slow calls make a drift), and from call
``SLOW_AT`` on one thing changes:

- ``bigger_op``: the forward does one more, large product (an 8192x8192 bf16 matmul);
- ``slower_loader``: the loop builds each batch on the host and copies it from pageable
  memory (64 MiB a step) instead of reusing a batch already on the device;
- ``added_sync``: the loop reads the loss with ``.item()`` after every step (it logged
  every 50 steps before) and the step does a data-dependent ``nonzero`` of its activations.

The MLP (width 1024, batch 4096, fp32) keeps the device about as busy as the host is
launching it (about 1 ms each on an H100), so each change slows the job: a smaller one (a
4096 product, a sync on a step whose GPU work is a tenth of the host's) moved the step by
16-18% there, under the default 20% threshold, and was rightly not called a drift. The
loop logs the loss every 50 steps (``.item()``), as training loops do, so the host keeps
the device's pace. Per scenario the script writes whether a second window was
recorded, the call it began at, and where the run folders are; ``--analyse`` (any machine
with the analysis installed) reads each triggered window's lead: what triggered it (and by
which rule), the untraced verdict (the watcher's own step times before and at the trigger,
their ratio and 95% interval), and the profiled steps' diff as the why (its step time, its
first ops and buckets)::

    PYTHONPATH=. python benchmarks/gpu/watch_drift.py --out OUT            # record (CUDA)
    PYTHONPATH=. python benchmarks/gpu/watch_drift.py --out OUT --analyse  # the comparisons
    PYTHONPATH=. python benchmarks/gpu/watch_drift.py --out OUT --tiny     # CPU, tiny sizes
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

SLOW_AT = 400  # the first slow call
CALLS = SLOW_AT + 300
SCENARIOS = ("bigger_op", "slower_loader", "added_sync")

PROGRAM = """
import json, sys, torch
from autoprof import autoprof

SCENARIO, SLOW_AT, CALLS, TINY = {scenario!r}, {slow_at}, {calls}, {tiny}
DEVICE = "cpu" if TINY else "cuda"
D, B = (32, 16) if TINY else (1024, 4096)
BIG = 64 if TINY else 8192
net = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.ReLU(), torch.nn.Linear(D, D),
                          torch.nn.ReLU(), torch.nn.Linear(D, 10)).to(DEVICE)
opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
x = torch.randn(B, D, device=DEVICE)
y = torch.randint(0, 10, (B,), device=DEVICE)
a = torch.randn(BIG, BIG, device=DEVICE, dtype=torch.bfloat16)
host_rows = (1 << 10) if TINY else (1 << 24) // D  # 64 MiB of fp32 a step on the GPU
host_batch = torch.randn(host_rows, D)
calls = [0]

@autoprof(name=SCENARIO, watch=True)
def train_step(x, y):
    calls[0] += 1
    slow = calls[0] >= SLOW_AT
    h = net[:4](x)
    if slow and SCENARIO == "bigger_op":
        h = h + (a @ a).float().mean() * 0
    if slow and SCENARIO == "added_sync":
        h = h + torch.nonzero(h > 0).shape[0] * 0.0
    loss = torch.nn.functional.cross_entropy(net[4](h), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()

for call in range(1, CALLS + 1):
    batch = x
    if call >= SLOW_AT and SCENARIO == "slower_loader":
        batch = host_batch.to(DEVICE)[: x.shape[0]]  # pageable: the host waits for it
    loss = train_step(batch, y)
    if call % 50 == 0 or (call >= SLOW_AT and SCENARIO == "added_sync"):
        loss.item()
import autoprof as package
package.flush()
for window in train_step.autoprof_session.watcher.opened:
    window.flush()
print(json.dumps({{"scenario": SCENARIO, "calls": calls[0]}}))
"""


def record(out: Path, tiny: bool) -> list[dict[str, Any]]:
    env = {**os.environ, "AUTOPROF_DIR": str(out / "runs")}
    rows = []
    for scenario in SCENARIOS:
        code = PROGRAM.format(scenario=scenario, slow_at=SLOW_AT, calls=CALLS, tiny=tiny)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=300)
        rows.append({"scenario": scenario, "returncode": done.returncode,
                     "stderr_tail": done.stderr[-2000:]})
        print(scenario, done.returncode, done.stdout.strip()[-200:], flush=True)
    return rows


def _manifest(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "manifest.json").read_text())
    return data


def _pace(watch_json: Path) -> dict[str, Any]:
    """The watched step time (ms, median of the watch.json points) before SLOW_AT and from
    SLOW_AT + 5 on (a point is [call, ms]), and their ratio: how much the change slowed the
    job, whatever the watcher made of it."""
    if not watch_json.is_file():
        return {}
    points = json.loads(watch_json.read_text()).get("points") or []
    before = [ms for call, ms in points if call < SLOW_AT]
    after = [ms for call, ms in points if call >= SLOW_AT + 5]
    if not before or not after:
        return {}
    b, a = statistics.median(before), statistics.median(after)
    return {"step_ms_before": round(b, 4), "step_ms_after": round(a, 4),
            "slowdown": round(a / b, 3)}


def _window(folder: Path) -> dict[str, Any]:
    """One triggered window's lead: its trigger, the untraced verdict (the watcher's own step
    times: before -> after, ratio, 95% interval, sample counts), and the profiled steps'
    diff as the why (its step time, first ops and buckets)."""
    import autoprof
    from autoprof.analysis.diff.triggered import lead

    trig = _manifest(folder)["trigger"]
    row: dict[str, Any] = {"run": folder.name, "kind": trig["kind"], "rule": trig.get("rule"),
                           "at_call": trig["at_call"],
                           "calls_after_slow_at": trig["at_call"] - SLOW_AT,
                           "baseline_ms": trig["baseline_ms"], "current_ms": trig["current_ms"]}
    answer = lead(autoprof.load(folder))
    if answer is None:
        return row
    data = answer.to_json()
    u = data["untraced"]
    step = u["step_time"] or {}
    row["verdict"] = data["verdict"]
    row["untraced"] = {"before_ms": u["before_ms"], "after_ms": u["after_ms"],
                       "ratio": u["ratio"], "ci_low_pct": step.get("ci_low_pct"),
                       "ci_high_pct": step.get("ci_high_pct"),
                       "samples": [u["samples_before"], u["samples_after"]],
                       "reason": u["reason"]}
    row["profiled_over_untraced"] = data["profiled_over_untraced"]
    row["why"] = [{k: w.get(k) for k in ("kind", "name", "delta_us_per_step")}
                  for w in data["why"][:3]]
    result = data["diff"]
    if result is not None:
        row["profiled_verdict"] = result["verdict"]
        row["profiled_step_time"] = result["step_time"]
        row["buckets"] = sorted(
            ({"name": b["name"], "delta_us_per_step": b["delta_us_per_step"]}
             for b in result["buckets"]), key=lambda b: -abs(b["delta_us_per_step"]))[:3]
    else:
        row["problem"] = data["problem"]
    return row


def analyse(out: Path) -> list[dict[str, Any]]:
    rows = []
    for scenario in SCENARIOS:
        runs = sorted((out / "runs" / scenario).glob("*/manifest.json"))
        folders = sorted((m.parent for m in runs), key=lambda r: _manifest(r)["started_at"])
        row: dict[str, Any] = {"scenario": scenario, "slow_at": SLOW_AT,
                               "windows": len(folders)}
        row |= _pace(folders[0] / "watch.json") if folders else {}
        row["triggered"] = [_window(f) for f in folders if "trigger" in _manifest(f)]
        rows.append(row)
        print(json.dumps(row, default=str)[:2500], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--analyse", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="CPU, tiny sizes")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.analyse:
        result = {"analysed": analyse(args.out)}
        (args.out / "watch_drift_analysed.json").write_text(json.dumps(result, indent=1))
        return
    result = {"recorded": record(args.out, args.tiny), "slow_at": SLOW_AT, "calls": CALLS}
    (args.out / "watch_drift.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
