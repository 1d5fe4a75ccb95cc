"""Small Kineto traces written by the tests: profiler steps with ops, launches and kernels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class TraceBuilder:
    """Builds a trace one step at a time; every op launches its kernels on stream 7."""

    def __init__(self, device: str | None = "NVIDIA H200") -> None:
        self.device = device
        self.events: list[dict[str, Any]] = []
        self.t = 1000.0
        self.gpu_t = 1000.0
        self.corr = 100
        self.step = 0

    def step_with(self, *ops: tuple[str, list[Any], list[str], list[tuple[Any, ...]]],
                  cpu_us: float = 50.0) -> None:
        """One ProfilerStep#N holding ``ops``: (name, input dims, input types, kernels)
        where kernels are (kernel name or "memset" or "Memcpy ...", duration in us[, the
        bytes Kineto's args give a memcpy / memset])."""
        start = self.t
        self.events.append({"ph": "X", "cat": "user_annotation",
                            "name": f"ProfilerStep#{self.step}", "pid": 1, "tid": 1,
                            "ts": start, "dur": cpu_us})
        t = start + 1
        for name, dims, types, kernels in ops:
            op = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t,
                  "dur": 2.0 * len(kernels) + 1, "args": {"External id": self.corr}}
            if dims is not None:
                op["args"]["Input Dims"] = dims
                op["args"]["Input type"] = types
            self.events.append(op)
            for i, (kname, dur, *nbytes) in enumerate(kernels):
                self.corr += 1
                lt = t + 0.5 + 2 * i
                self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                    "pid": 1, "tid": 1, "ts": lt, "dur": 1.0,
                                    "args": {"correlation": self.corr}})
                self.gpu_t = max(self.gpu_t, lt + 5)
                cat = ("gpu_memset" if kname == "memset" else
                       "gpu_memcpy" if kname.startswith("Memcpy") else "kernel")
                gpu_args: dict[str, Any] = {"correlation": self.corr, "device": 0,
                                            "stream": 7}
                if nbytes:
                    gpu_args["bytes"] = nbytes[0]
                self.events.append({"ph": "X", "cat": cat,
                                    "name": "Memset (Device)" if kname == "memset" else kname,
                                    "pid": 0, "tid": 7, "ts": self.gpu_t, "dur": dur,
                                    "args": gpu_args})
                self.gpu_t += dur
            t += 2.0 * len(kernels) + 2
        self.step += 1
        self.t = max(start + cpu_us, self.gpu_t) + 10

    def write(self, path: Path) -> Path:
        top: dict[str, Any] = {"schemaVersion": 1, "traceEvents": self.events}
        if self.device:
            top["deviceProperties"] = [{"id": 0, "name": self.device}]
        path.write_text(json.dumps(top))
        return path


BF16 = "c10::BFloat16"
FP32 = "float"


def mm(n: int, dtype: str = BF16) -> tuple[str, list[Any], list[str]]:
    return "aten::mm", [[n, n], [n, n]], [dtype, dtype]


def add(n: int, dtype: str = BF16) -> tuple[str, list[Any], list[str]]:
    return "aten::add", [[n, n], [n, n], []], [dtype, dtype, "Scalar"]
