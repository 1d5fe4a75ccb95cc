"""Does a decorated decode loop run at its own pace before, during and after autoprof's window?

Run from the repository root on a CUDA machine (transformers installed; no download: the model
is built from a config with random weights)::

    PYTHONPATH=. python benchmarks/gpu/decode_pace.py --out OUT

An autoregressive decode: one token per call of ``decode_step`` (a GPT-2-shaped model with a
key/value cache), then an end-of-sequence check by ``.item()``, as a generation loop writes it.
Each trial is a fresh process in one of these modes, interleaved over ``--trials`` rounds:

- ``plain``: no autoprof imported;
- ``imported``: ``import autoprof`` and nothing else;
- ``autoprof``: ``@autoprof`` on ``decode_step`` with its defaults;
- ``autoprof-nolines``: the same with the source-lines step off (``source_lines=False``).

Every call is timed the same way in every mode, from outside the decorated function: the host
clock between two device synchronizations. ``OUT/decode_pace.json`` holds each trial's call
times and, per mode, the median call of calls 0-2 (autoprof's warm-up calls), 3-8 (its window)
and 9 on (after it), with the autoprof manifests' own ``warmup_call_ms`` and
``after_window_call_ms``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("plain", "imported", "autoprof", "autoprof-nolines")


def _model(layers: int, width: int) -> Any:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=layers, n_embd=width, n_head=max(width // 64, 1),
                        vocab_size=32000, n_positions=1024)
    torch.manual_seed(0)
    return GPT2LMHeadModel(config).to("cuda", torch.bfloat16).eval()


def _trial(mode: str, calls: int, layers: int, width: int, out_dir: Path) -> dict[str, Any]:
    import torch

    model = _model(layers, width)
    prompt = torch.randint(0, 32000, (1, 64), device="cuda")
    with torch.inference_mode():
        past = model(input_ids=prompt, use_cache=True).past_key_values
    state = {"token": prompt[:, -1:], "past": past}

    def decode_step() -> bool:
        with torch.inference_mode():
            out = model(input_ids=state["token"], past_key_values=state["past"], use_cache=True)
        state["past"] = out.past_key_values
        state["token"] = out.logits[:, -1:].argmax(-1)
        return bool((state["token"] == 0).item())  # the end-of-sequence check, a sync a token

    step = decode_step
    if mode.startswith("autoprof"):
        os.environ["AUTOPROF_DIR"] = str(out_dir)
        from autoprof import autoprof

        step = (autoprof(source_lines=False)(decode_step) if mode == "autoprof-nolines"
                else autoprof(decode_step))
    elif mode == "imported":
        import autoprof  # noqa: F401

    times_ms = []
    for _ in range(calls):
        torch.cuda.synchronize()
        started = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times_ms.append((time.perf_counter() - started) * 1e3)
    if mode.startswith("autoprof"):
        import autoprof as ap

        ap.flush()
    return {"mode": mode, "call_ms": times_ms, "manifests": _manifests(out_dir)}


def _manifests(out_dir: Path) -> list[dict[str, Any]]:
    keys = ("status", "warmup_call_ms", "after_window_call_ms", "after_window_iter_ms",
            "wait_call_ms", "profiler_start_ms")
    found = []
    for path in sorted(out_dir.glob("*/*/manifest.json")):
        record = json.loads(path.read_text())
        found.append({k: record.get(k) for k in keys})
    return found


def _phases(call_ms: list[float]) -> dict[str, float]:
    return {"warmup_0_2_ms": statistics.median(call_ms[0:3]),
            "window_3_8_ms": statistics.median(call_ms[3:9]),
            "after_9_on_ms": statistics.median(call_ms[9:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--width", type=int, default=768)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.mode:
        with tempfile.TemporaryDirectory() as tmp:
            result = _trial(args.mode, args.calls, args.layers, args.width, Path(tmp))
        (args.out / f"pace_{args.mode}.json").write_text(json.dumps(result))
        return
    trials: list[dict[str, Any]] = []
    for _ in range(args.trials):
        for mode in MODES:
            subprocess.run([sys.executable, __file__, "--out", str(args.out), "--mode", mode,
                            "--calls", str(args.calls), "--layers", str(args.layers),
                            "--width", str(args.width)], check=True)
            result = json.loads((args.out / f"pace_{mode}.json").read_text())
            result["phases"] = _phases(result["call_ms"])
            trials.append(result)
            print(mode, {k: round(v, 2) for k, v in result["phases"].items()}, flush=True)
    medians = {mode: {phase: statistics.median(t["phases"][phase] for t in trials
                                               if t["mode"] == mode)
                      for phase in ("warmup_0_2_ms", "window_3_8_ms", "after_9_on_ms")}
               for mode in MODES}
    (args.out / "decode_pace.json").write_text(json.dumps(
        {"trials": trials, "medians": medians}, indent=1))
    print(json.dumps(medians, indent=1))


if __name__ == "__main__":
    main()
