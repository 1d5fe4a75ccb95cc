"""Time one workload's baseline and every fix by hand, with no profiler in the process.

    PYTHONPATH=. python benchmarks/gpu/truth/ground_truth.py --workload NAME --out FILE.json \\
        [--device cpu --tiny] [--rounds 3] [--block-s 0.4]

Every variant is built, warmed up (3 calls, then a 5-iteration calibration block that sizes
its blocks to about ``--block-s`` seconds), then all variants run in interleaved rounds (A B C,
A B C, C B A, C B A for 4 rounds). Each block times every iteration of the user's loop with
one CUDA event per iteration, none synchronised until the block ends: even rounds put it at
each iteration's start (the whole iteration, the loader included), odd rounds before and after
the function call (the call alone); the host clock times both in every round. The JSON holds,
per variant, the median, quartiles and IQR over every timed iteration and each round's median,
and per fix its speedup over the baseline (ratio of medians; ``lo``/``hi`` from the quartiles:
baseline q1 over fix q3 and baseline q3 over fix q1; the per-round ratios' range;
``speedup_net``: both medians less the timing's own cost per iteration, measured on a call
that does nothing). This process never imports autoprof and never starts torch.profiler
(``torch`` imports the module itself; the JSON records that the profiler was never enabled).
A fix that raises is listed under ``errors``; ``--skip`` leaves variants out, ``--pair FIX``
times the baseline beside that one fix (the driver times each fix so, in a process of its
own, when a CUDA error or an abort took the process with every variant down). With
``--isolate`` (the default for workloads with a DataLoader) each block builds its variant
afresh and closes it after: only one variant's DataLoader, with its worker processes and
pin-memory thread, is alive while a block is timed, so no variant shares the machine with
another's idle workers.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from common import (  # noqa: E402
    Block,
    Ctx,
    TimingMode,
    Variant,
    VariantBuilder,
    quartiles,
    repeat,
    sync,
    time_block,
)
from workloads import WORKLOADS  # noqa: E402

METRICS = ("iter_ms", "call_ms", "iter_host_ms", "call_host_ms")


def _prepare(variant: Variant, ctx: Ctx, block_s: float, min_iters: int, max_iters: int
             ) -> tuple[int, float]:
    for _ in range(3):
        variant.call(next(variant.batches))
    sync(ctx)
    calib = time_block(variant, 5, ctx)
    per_iter_ms = max(statistics.median(calib.iter_ms), 1e-3)
    return int(min(max_iters, max(min_iters, block_s * 1e3 / per_iter_ms))), per_iter_ms


def _close(variant: Variant) -> None:
    """Drop a variant and what it holds (a DataLoader's workers end with their iterator)."""
    close = getattr(variant.batches, "close", None)
    if close is not None:
        close()
    variant.keep.clear()
    gc.collect()


def _isolated_block(build: VariantBuilder, iters: int, ctx: Ctx, mode: TimingMode) -> Block:
    variant = build()
    try:
        for _ in range(3):
            variant.call(next(variant.batches))
        sync(ctx)
        return time_block(variant, iters, ctx, mode)
    finally:
        _close(variant)


def _harness_ms(ctx: Ctx) -> dict[str, Any]:
    """What the timing itself costs per iteration: the same loop around a call doing nothing."""
    null = Variant(lambda _: None, repeat(None), warm_iters=5)
    return {"iter": quartiles(time_block(null, 200, ctx, "iter").iter_ms),
            "call": quartiles(time_block(null, 200, ctx, "call").call_ms)}


def _speedup(base: dict[str, float], fix: dict[str, float], rounds: list[float],
             harness_ms: float) -> dict[str, Any]:
    net = fix["median"] - harness_ms
    return {"speedup": base["median"] / fix["median"],
            "speedup_net": (base["median"] - harness_ms) / net if net > 0 else None,
            "lo": base["q1"] / fix["q3"] if fix["q3"] else None,
            "hi": base["q3"] / fix["q1"] if fix["q1"] else None,
            "rounds_min": min(rounds) if rounds else None,
            "rounds_max": max(rounds) if rounds else None}


def _summarise(blocks: dict[str, list[Block]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, runs in blocks.items():
        entry: dict[str, Any] = {}
        for metric in METRICS:
            values = [v for blk in runs for v in getattr(blk, metric)]
            entry[metric] = quartiles(values)
            entry[metric]["round_medians"] = [statistics.median(getattr(b, metric))
                                              for b in runs if getattr(b, metric)]
        out[name] = entry
    return out


def _speedups(stats: dict[str, Any], harness: dict[str, Any]) -> dict[str, Any]:
    base = stats.get("baseline")
    if base is None:
        return {}
    result: dict[str, Any] = {}
    for name, entry in stats.items():
        if name == "baseline":
            continue
        result[name] = {}
        for metric in ("iter_ms", "call_ms"):
            rounds = [b / f for b, f in zip(base[metric]["round_medians"],
                                            entry[metric]["round_medians"], strict=False) if f]
            key = metric.removesuffix("_ms")
            result[name][key] = _speedup(base[metric], entry[metric], rounds,
                                         harness[key]["median"])
    return result


def measure(name: str, ctx: Ctx, rounds: int, block_s: float, skip: tuple[str, ...] = (),
            isolate: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    variants: dict[str, Variant] = {}
    builders: dict[str, VariantBuilder] = {}
    info: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    for vname, build in WORKLOADS[name].build(ctx).items():
        if vname in skip:
            continue
        t0 = time.perf_counter()
        try:
            variant = build()
            iters, calib_ms = _prepare(variant, ctx, block_s, 8, 400)
        except Exception as exc:  # a fix that does not apply is a result, not a crash
            errors[vname] = "".join(traceback.format_exception_only(exc)).strip()[-800:]
            continue
        builders[vname] = build
        if isolate:
            _close(variant)
        else:
            variants[vname] = variant
        info[vname] = {"iters_per_block": iters, "warm_iters": variant.warm_iters,
                       "calibration_iter_ms": calib_ms, "note": variant.note,
                       "build_and_warmup_s": time.perf_counter() - t0}
    harness = _harness_ms(ctx)
    blocks: dict[str, list[Block]] = {v: [] for v in builders}
    order = list(builders)
    for r in range(rounds):
        mode: TimingMode = "iter" if r % 2 == 0 else "call"
        for vname in order if (r // 2) % 2 == 0 else order[::-1]:
            if vname in errors:
                continue
            iters = info[vname]["iters_per_block"]
            try:
                blocks[vname].append(
                    _isolated_block(builders[vname], iters, ctx, mode) if isolate
                    else time_block(variants[vname], iters, ctx, mode))
            except Exception as exc:
                errors[vname] = "".join(traceback.format_exception_only(exc)).strip()[-800:]
                blocks.pop(vname, None)
    stats = _summarise({k: v for k, v in blocks.items() if v})
    return {
        "workload": name, "about": WORKLOADS[name].about, "device": ctx.device, "tiny": ctx.tiny,
        "rounds": rounds, "block_s": block_s, "variants": info, "errors": errors,
        "harness_iter_ms": harness, "stats": stats, "speedups": _speedups(stats, harness),
        "skipped": list(skip), "isolated": isolate,
        "profiler_enabled": bool(
            torch.autograd._profiler_enabled()),  # type: ignore[attr-defined]
        "autoprof_imported": "autoprof" in sys.modules,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if ctx.cuda else None,
        "wall_s": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (CPU smoke test)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--skip", default="", help="comma-separated variants to leave out")
    parser.add_argument("--pair", default="", help="time the baseline and this fix only")
    parser.add_argument("--list", action="store_true",
                        help="print the workload's variant names (JSON) and exit")
    parser.add_argument("--block-s", type=float, default=0.25)
    parser.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                        help="build each block's variant afresh (default: for DataLoader "
                             "workloads)")
    args = parser.parse_args()
    ctx = Ctx(args.device, args.tiny or args.device == "cpu")
    names = list(WORKLOADS[args.workload].build(ctx))
    if args.list:
        print(json.dumps(names))
        return
    skip = tuple(v for v in args.skip.split(",") if v) + tuple(
        v for v in names if args.pair and v not in ("baseline", args.pair))
    isolate = WORKLOADS[args.workload].isolate if args.isolate is None else args.isolate
    result = measure(args.workload, ctx, args.rounds, args.block_s, skip, isolate)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    base = result["stats"].get("baseline", {}).get("iter_ms", {})
    line = ", ".join(f"{k} {v['iter']['speedup']:.2f}x" for k, v in result["speedups"].items())
    print(f"{args.workload}: baseline {base.get('median', float('nan')):.3f} ms/iter; {line}; "
          f"errors {sorted(result['errors'])}")


if __name__ == "__main__":
    main()
