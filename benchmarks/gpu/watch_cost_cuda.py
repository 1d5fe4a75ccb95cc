"""What watching costs a call on CUDA: a function that launches one small kernel, plain
(``functools.wraps``) against ``@autoprof(watch=...)`` past its first window with the
device's clock (``clock="auto"``: a CUDA event every 4th call, read once the device passed
it) and with the host's (``clock="host"``), side by side in one process, interleaved
rounds, the best loop of each round (wall clock, a sync at each loop's end), the median
over rounds::

    PYTHONPATH=. python benchmarks/gpu/watch_cost_cuda.py [--rounds 7] [--out FILE]

``--parts`` also times, alone in the same loop, each CUDA call the device clock can make
(``parts_ns_per_call``: the kernel alone, then each call beside it), to say where a watched
call's cost goes.

``max_windows=0``: a drift seen in this tight loop must not start a window inside the
measurement. Goal: at most 1% of a 1 ms step (10 us a call).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from watch_cost import _plain  # noqa: E402  (the CPU benchmark's plain functools.wraps wrapper)


def _step(x: Any) -> Any:
    return x.add_(1.0)


def _watched(out: str, clock: str) -> Any:
    from autoprof import autoprof

    f = autoprof(name=f"bench_cuda_{clock}", warmup=0, out_dir=out,
                 schedule=dict(wait=0, warmup=0, active=1, repeat=1),
                 watch={"max_windows": 0, "signal": False, "clock": clock})(_step)
    x = torch.zeros(256, device="cuda")
    for _ in range(300):  # the window, the calls after it, then the baseline learnt
        f(x)
    torch.cuda.synchronize()
    return f


def _best_ns(fn: Any, x: Any, calls: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        torch.cuda.synchronize()
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn(x)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def _parts(calls: int) -> dict[str, float]:
    """ns a call of each CUDA call the device clock can make, beside the kernel (its own
    cost: the kernel alone subtracted), the best of 3 loops."""
    x = torch.zeros(256, device="cuda")
    c_api = torch._C
    stream = torch.cuda.current_stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    torch.cuda.synchronize()
    candidates: dict[str, Any] = {
        "is_current_stream_capturing": torch.cuda.is_current_stream_capturing,
        "_cuda_isCurrentStreamCapturing": c_api._cuda_isCurrentStreamCapturing,
        "current_stream": torch.cuda.current_stream,
        "_cuda_getDevice + _cuda_getCurrentRawStream":
            lambda: c_api._cuda_getCurrentRawStream(c_api._cuda_getDevice()),
        "Event.record()": start.record,
        "Event.record(stream)": lambda: start.record(stream),
        "_CudaEventBase.record(event, stream)":
            lambda: c_api._CudaEventBase.record(start, stream),
        "Event.query()": end.query,
        "Event.elapsed_time": lambda: start.elapsed_time(end),
    }

    def loop(extra: Any) -> float:
        def call(t: Any) -> None:
            t.add_(1.0)
            if extra is not None:
                extra()
        return _best_ns(call, x, calls)

    kernel = loop(None)
    parts = {"kernel alone (add_ on 256 floats)": kernel}
    for name, extra in candidates.items():
        parts[name] = loop(extra) - kernel
    return parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--parts", action="store_true", help="also time each CUDA call")
    args = parser.parse_args()
    import autoprof

    with tempfile.TemporaryDirectory() as out:
        subjects = {"plain_wraps": _plain(_step), "watch_device_clock": _watched(out, "auto"),
                    "watch_host_clock": _watched(out, "host")}
        autoprof.flush()
        clocks = {k: getattr(getattr(f, "autoprof_session", None), "watcher", None)
                  for k, f in subjects.items()}
        x = torch.zeros(256, device="cuda")
        rounds: dict[str, list[float]] = {k: [] for k in subjects}
        for _ in range(args.rounds):
            for name, fn in subjects.items():
                rounds[name].append(_best_ns(fn, x, args.calls))
    med = {k: statistics.median(v) for k, v in rounds.items()}
    result = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "watchers": {k: None if w is None else w.clock for k, w in clocks.items()},
        "rounds_ns_per_call": rounds,
        "median_ns_per_call": med,
        "device_clock_extra_ns_per_call": med["watch_device_clock"] - med["plain_wraps"],
        "host_clock_extra_ns_per_call": med["watch_host_clock"] - med["plain_wraps"],
        "goal_extra_ns_per_call": 10_000,
    }
    if args.parts:
        result["parts_ns_per_call"] = _parts(args.calls)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
