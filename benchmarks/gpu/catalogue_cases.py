"""The fix catalogue judged on programs written before any prediction was read.

Each case is a small PyTorch program with one common performance bug and the fix applied by
hand (the catalogue in docs/analysis.md). Nothing here reads autoprof's analysis while it
measures: the programs and their fixes were written first, and the script only

1. times each program and its fix **without the profiler**, each in a **fresh process**
   (autoprof is never imported there), with CUDA events around a block of back-to-back
   iterations after a warm-up, the median over blocks; processes interleaved (round r runs
   every case's baseline and fix before round r+1 starts, so a drift of the machine touches
   them alike), the median over rounds;
2. records each baseline once with ``@autoprof`` (its defaults, in a fresh process of its
   own) into ``OUT/runs/<case>/``, so that the predictions can be compared later;
3. writes ``OUT/catalogue_truth.json``: per case, what it is, the fix, each round's ms per
   iteration of both sides and the measured speedup (median of the rounds' ratios), and the
   run folder.

One command on an H100 (about 5-7 minutes; it stops adding timing rounds at ``--budget-s``):

    PYTHONPATH=. python benchmarks/gpu/catalogue_cases.py --out OUT

Afterwards, on any machine with the analysis (this step reads the predictions):

    PYTHONPATH=. python benchmarks/gpu/catalogue_cases.py --out OUT --compare

prints, per case, the measured speedup beside the fixes autoprof offers (first the one it
ranks first) and their estimates and intervals, and writes ``OUT/catalogue_compare.json``.
CPU-only entries (intra-op threads against cores) are not here: they need a CPU machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# --- the programs ---------------------------------------------------------------------------
# Each: SETUP (builds state, on CUDA), BASE (one iteration as the bug has it), FIX (the
# iteration with the fix applied by hand; may use names SETUP made). `expect` names the
# catalogue entry that should offer the fix.

CASES: dict[str, dict[str, str]] = {
    "pageable_copy": {
        "about": "MLP training step whose batch (16 MiB fp32) is copied each step from "
                 "pageable host memory",
        "fix": "pinned host buffer, .to(device, non_blocking=True)",
        "expect": "pageable_copies / pin-memory",
        "setup": """
model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
                            torch.nn.Linear(2048, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
host = torch.randn(4096, 1024)
pinned = host.pin_memory()
def train(x):
    opt.zero_grad(set_to_none=True)
    model(x).square().mean().backward()
    opt.step()
""",
        "base": "train(host.to('cuda'))",
        "fix_code": "train(pinned.to('cuda', non_blocking=True))",
    },
    "row_loop": {
        "about": "normalise each of 256 rows in a Python loop, then a matmul",
        "fix": "one vectorised normalisation over the batch",
        "expect": "a vectorise entry naming the loop",
        "setup": """
x = torch.randn(256, 512, device='cuda')
w = torch.randn(512, 512, device='cuda')
""",
        "base": """
rows = [r / r.norm() for r in x]
y = torch.stack(rows) @ w
""",
        "fix_code": "y = (x / x.norm(dim=1, keepdim=True)) @ w",
    },
    "grad_scaler": {
        "about": "fp16 autocast training step with GradScaler (its step syncs)",
        "fix": "bf16 autocast without a scaler",
        "expect": "remove-sync / GradScaler entry",
        "setup": """
model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(8)]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
scaler = torch.amp.GradScaler('cuda')
x = torch.randn(64, 512, device='cuda')
def fixed():
    opt.zero_grad(set_to_none=True)
    with torch.autocast('cuda', dtype=torch.bfloat16):
        loss = model(x).float().square().mean()
    loss.backward()
    opt.step()
""",
        "base": """
opt.zero_grad(set_to_none=True)
with torch.autocast('cuda', dtype=torch.float16):
    loss = model(x).float().square().mean()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
""",
        "fix_code": "fixed()",
    },
    "adam_foreach_false": {
        "about": "Adam over 192 small parameters with foreach=False",
        "fix": "Adam(..., fused=True)",
        "expect": "optimizer_ops / fused-optimizer",
        "setup": """
params = [torch.randn(256, 64, device='cuda', requires_grad=True) for _ in range(192)]
for p in params:
    p.grad = torch.randn_like(p)
slow = torch.optim.Adam(params, lr=1e-4, foreach=False)
fast = torch.optim.Adam(params, lr=1e-4, fused=True)
""",
        "base": "slow.step()",
        "fix_code": "fast.step()",
    },
    "item_per_step": {
        "about": "a training step that reads loss.item() every step",
        "fix": "accumulate the loss on the device, read it once at the end",
        "expect": "host_sync / remove-sync",
        "setup": """
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(6)]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(32, 256, device='cuda')
total = torch.zeros((), device='cuda')
logged = []
def step():
    opt.zero_grad(set_to_none=True)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    return loss
""",
        "base": "logged.append(step().item())",
        "fix_code": "total.add_(step().detach())",
    },
    "fp32_matmul": {
        "about": "fp32 matrix products (2048) with TF32 off",
        "fix": "torch.backends.cuda.matmul.allow_tf32 = True",
        "expect": "a TF32/bf16 entry",
        "setup": """
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn(2048, 2048, device='cuda')
b = torch.randn(2048, 2048, device='cuda')
if FIXED:
    torch.backends.cuda.matmul.allow_tf32 = True
""",
        "base": "c = a @ b",
        "fix_code": "c = a @ b",
    },
    "inference_grad": {
        "about": "inference of an MLP with autograd on (no no_grad / inference_mode)",
        "fix": "torch.inference_mode()",
        "expect": "an inference_mode entry",
        "setup": """
model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(12)]).cuda()
x = torch.randn(16, 512, device='cuda')
def infer():
    with torch.inference_mode():
        return model(x)
""",
        "base": "y = model(x)",
        "fix_code": "y = infer()",
    },
    "host_created_tensor": {
        "about": "position ids built on the host with torch.arange, then moved, each step",
        "fix": "torch.arange(..., device='cuda')",
        "expect": "a host-created-tensor entry (or pageable_copies)",
        "setup": """
emb = torch.nn.Embedding(4096, 256).cuda()
lin = torch.nn.Linear(256, 256).cuda()
""",
        "base": "y = lin(emb(torch.arange(2048).cuda()))",
        "fix_code": "y = lin(emb(torch.arange(2048, device='cuda')))",
    },
    "conv_benchmark_off": {
        "about": "a small conv net, cudnn.benchmark off, NCHW",
        "fix": "torch.backends.cudnn.benchmark = True",
        "expect": "a cudnn.benchmark entry",
        "setup": """
torch.backends.cudnn.benchmark = bool(FIXED)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
                          torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
                          torch.nn.Conv2d(64, 64, 3, padding=1)).cuda()
x = torch.randn(32, 3, 64, 64, device='cuda')
""",
        "base": "y = net(x)",
        "fix_code": "y = net(x)",
    },
}

TIMER = """
import json, statistics, sys, torch
FIXED = {fixed}
{setup}
def body():
{body}
for _ in range({warmup}):
    body()
torch.cuda.synchronize()
blocks = []
for _ in range({blocks}):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range({iters}):
        body()
    end.record()
    end.synchronize()
    blocks.append(start.elapsed_time(end) / {iters})
print(json.dumps({{"ms_per_iter": statistics.median(blocks), "blocks_ms": blocks,
                  "profiler_free": "autoprof" not in sys.modules}}))
"""

RECORD = """
import torch
from autoprof import autoprof
FIXED = False
{setup}
@autoprof(name="{case}")
def body():
{body}
for _ in range({calls}):
    body()
torch.cuda.synchronize()
"""


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.strip().splitlines())


def _program(case: dict[str, str], fixed: bool, args: argparse.Namespace) -> str:
    body = case["fix_code"] if fixed else case["base"]
    return TIMER.format(fixed=fixed, setup=case["setup"], body=_indent(body),
                        warmup=args.warmup, blocks=args.blocks, iters=args.iters)


def _run(code: str, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """One fresh process; its last stdout line as JSON (an error record when it failed)."""
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or [f"rc {done.returncode}"]}
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def _timing_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPROF")}
    return env


def time_round(names: list[str], args: argparse.Namespace, results: dict[str, Any]) -> None:
    """One round: every case's baseline and fix, each in a fresh process, interleaved."""
    env = _timing_env()
    for name in names:
        for side in ("base", "fixed"):
            got = _run(_program(CASES[name], side == "fixed", args), env, args.timeout_s)
            results[name]["rounds"][side].append(got)
            print(f"  {name} {side}: {got.get('ms_per_iter', got.get('error'))}", flush=True)


def record(names: list[str], args: argparse.Namespace, out: Path,
           results: dict[str, Any]) -> None:
    """Each baseline recorded once with @autoprof's defaults, in a fresh process."""
    env = {**os.environ, "AUTOPROF_DIR": str(out / "runs")}
    for name in names:
        case = CASES[name]
        code = RECORD.format(setup=case["setup"], case=name, body=_indent(case["base"]),
                             calls=args.record_calls)
        started = time.monotonic()
        got = _run(code, env, args.timeout_s * 3)
        folders = sorted((out / "runs" / name).glob("*")) if (out / "runs" / name).exists() \
            else []
        results[name]["record"] = {"run": str(folders[-1].relative_to(out)) if folders else None,
                                   "error": got.get("error"),
                                   "wall_s": round(time.monotonic() - started, 1)}
        print(f"  recorded {name}: {results[name]['record']}", flush=True)


def _ms(rows: list[dict[str, Any]]) -> list[float]:
    return [float(r["ms_per_iter"]) for r in rows if "ms_per_iter" in r]


def summarise(results: dict[str, Any]) -> None:
    """Per case: the medians and the measured speedup (median over rounds of base / fixed,
    rounds paired)."""
    for entry in results.values():
        base, fixed = _ms(entry["rounds"]["base"]), _ms(entry["rounds"]["fixed"])
        ratios = [b / f for b, f in zip(base, fixed, strict=False) if f > 0]
        entry["base_ms_median"] = statistics.median(base) if base else None
        entry["fixed_ms_median"] = statistics.median(fixed) if fixed else None
        entry["measured_speedup"] = statistics.median(ratios) if ratios else None
        entry["speedup_per_round"] = ratios


def measure(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n in CASES if not args.cases or n in args.cases]
    started = time.monotonic()
    results: dict[str, Any] = {
        n: {k: CASES[n][k] for k in ("about", "fix", "expect")} |
        {"rounds": {"base": [], "fixed": []}} for n in names}
    print("round 1", flush=True)
    time_round(names, args, results)
    print("recording the baselines with @autoprof", flush=True)
    record(names, args, out, results)
    rounds = 1
    per_round = (time.monotonic() - started) / 2.0  # a rough share: one round, one record
    while rounds < args.rounds and time.monotonic() - started + per_round < args.budget_s:
        rounds += 1
        print(f"round {rounds}", flush=True)
        time_round(names, args, results)
    summarise(results)
    import torch
    meta = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "rounds": rounds, "warmup": args.warmup, "blocks": args.blocks,
            "iters": args.iters, "wall_s": round(time.monotonic() - started, 1),
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    (out / "catalogue_truth.json").write_text(json.dumps({"meta": meta, "cases": results},
                                                         indent=1))
    for name, entry in results.items():
        print(f"{name:22s} measured {entry['measured_speedup']}")


def compare(args: argparse.Namespace) -> None:
    """Reads the recorded runs' opportunities (the predictions) beside the measured gains."""
    import autoprof

    out = Path(args.out)
    truth = json.loads((out / "catalogue_truth.json").read_text())
    rows = {}
    for name, entry in truth["cases"].items():
        run_rel = (entry.get("record") or {}).get("run")
        if not run_rel:
            rows[name] = {"measured_speedup": entry.get("measured_speedup"), "offered": None}
            continue
        opps = autoprof.load(out / run_rel).analysis.opportunities
        offered = [{k: o.get(k) for k in ("cause", "fix", "predicted_speedup",
                                          "predicted_interval", "max_speedup", "ranked_by")}
                   for o in opps]
        rows[name] = {"measured_speedup": entry.get("measured_speedup"),
                      "fix_by_hand": entry["fix"], "expect": entry["expect"],
                      "offered": offered}
        first = offered[0] if offered else {}
        print(f"{name:22s} measured {entry.get('measured_speedup')}; first offered "
              f"{first.get('cause')} {first.get('fix')} {first.get('predicted_speedup')}")
    (out / "catalogue_compare.json").write_text(json.dumps(rows, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--compare", action="store_true",
                        help="read the recorded runs' predictions beside the measured gains")
    parser.add_argument("--cases", nargs="*", help="only these cases")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="no new timing round starts past this (the first always runs)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--record-calls", type=int, default=30)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    args = parser.parse_args()
    if args.compare:
        compare(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
