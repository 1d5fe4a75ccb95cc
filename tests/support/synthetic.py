"""Synthetic Kineto traces of any size, for loader tests and benchmarks.

``write_synthetic_trace(path, n_events)`` writes a trace shaped like torch.profiler's
``export_chrome_trace`` output on a CUDA machine (Kineto's multi-line layout, about 370 bytes
per event): ``ProfilerStep#N`` spans, a ``forward`` annotation, nested ``cpu_op`` events
(``aten::linear`` > ``aten::t`` > ``aten::transpose`` > ``aten::as_strided``, ``aten::addmm``,
``aten::relu`` > ``aten::clamp_min``), ``cudaLaunchKernel`` runtime calls with correlation ids,
kernels on GPU 0 stream 7, ``ac2g`` flow pairs, one ``gpu_user_annotation`` per step and the
usual metadata. The event count (every entry of ``traceEvents``) is exactly ``n_events``.
"""

from __future__ import annotations

import gzip
import io
import random
from pathlib import Path
from typing import Any, TextIO

_PID = 4242
_GPU_TID = 7
_HEADER = """{
  "schemaVersion": 1,
  "deviceProperties": [
    {
    "id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
    "computeMajor": 9, "computeMinor": 0,
    "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "warpSize": 32,
    "sharedMemPerBlock": 49152, "numSms": 132
    }
  ],
  "record_shapes": 1,
  "with_flops": 1,
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1790857026000000000,
  "traceEvents": [
"""
_KERNELS = (
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
    "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, float, "
    "std::array<char*, 2ul>)",
)


class _Writer:
    """Appends events in Kineto's layout and counts them."""

    def __init__(self, out: TextIO, rng: random.Random) -> None:
        self.out = out
        self.rng = rng
        self.count = 0
        self.external_id = 0
        self.correlation = 100

    def _emit(self, text: str) -> None:
        if self.count:
            self.out.write(",\n")
        self.out.write(text)
        self.count += 1

    def span(self, cat: str, name: str, tid: int, ts: float, dur: float, args: str) -> None:
        self._emit(
            f'  {{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {_PID}, '
            f'"tid": {tid},\n    "ts": {ts:.3f}, "dur": {dur:.3f},\n'
            f'    "args": {{\n      {args}\n    }}\n  }}'
        )

    def op(self, name: str, ts: float, dur: float, dims: str, flops: int | None = None) -> None:
        self.external_id += 1
        extra = f', "flops": {flops}' if flops is not None else ""
        args = (
            f'"External id": {self.external_id},"Record function id": 0, '
            f'"Sequence number": {self.external_id}, "Fwd thread id": 0, '
            f'"Concrete Inputs": ["", ""], "Input type": ["float", "float"], '
            f'"Input Strides": [[64, 1], [64, 1]], "Input Dims": {dims}, '
            f'"Ev Idx": {self.external_id}{extra}'
        )
        self.span("cpu_op", name, _PID, ts, dur, args)

    def launch(self, ts: float, dur: float, kernel: str, k_ts: float, k_dur: float) -> None:
        self.correlation += 1
        corr = self.correlation
        self.span(
            "cuda_runtime", "cudaLaunchKernel", _PID, ts, dur,
            f'"External id": {self.external_id}, "cbid": 211, "correlation": {corr}',
        )
        self._emit(
            f'  {{\n    "ph": "s", "id": {corr}, "pid": {_PID}, "tid": {_PID}, '
            f'"ts": {ts:.3f},\n    "cat": "ac2g", "name": "ac2g"\n  }}'
        )
        self._emit(
            f'  {{\n    "ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, '
            f'"tid": {_GPU_TID},\n    "ts": {k_ts:.3f}, "dur": {k_dur:.3f},\n    "args": {{\n'
            f'      "External id": {self.external_id}, "queued": 0, "device": 0, '
            f'"context": 1, "stream": {_GPU_TID}, "correlation": {corr}, '
            f'"registers per thread": 128, "shared memory": 32768, "grid": [8, 1, 1], '
            f'"block": [128, 1, 1]\n    }}\n  }}'
        )
        self._emit(
            f'  {{\n    "ph": "f", "id": {corr}, "pid": 0, "tid": {_GPU_TID}, '
            f'"ts": {k_ts:.3f},\n    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }}'
        )

    def metadata(self, name: str, pid: int | str, tid: int, args: str, ts: float) -> None:
        self._emit(
            f'  {{\n    "name": "{name}", "ph": "M", "ts": {ts:.3f}, "pid": {pid}, '
            f'"tid": {tid},\n    "args": {{\n      {args}\n    }}\n  }}'
        )


_LAYER_EVENTS = 16
_METADATA_EVENTS = 6


def _layer(w: _Writer, t: float, gpu_t: float) -> tuple[float, float]:
    """One linear+relu layer starting at ``t``: 16 events. Returns (cpu end, gpu end)."""
    r = w.rng
    dims = "[[64, 256], [256, 256]]"
    # aten::linear > t > transpose > as_strided, then addmm > launch (inside linear)
    lin_ts = t
    t_ts = lin_ts + r.uniform(1, 3)
    tr_ts = t_ts + r.uniform(0.5, 1.5)
    as_ts = tr_ts + r.uniform(0.3, 1.0)
    as_dur = r.uniform(0.5, 2)
    tr_dur = (as_ts - tr_ts) + as_dur + r.uniform(0.2, 1)
    t_dur = (tr_ts - t_ts) + tr_dur + r.uniform(0.2, 1)
    mm_ts = t_ts + t_dur + r.uniform(0.5, 2)
    la_ts = mm_ts + r.uniform(2, 5)
    la_dur = r.uniform(3, 8)
    mm_dur = (la_ts - mm_ts) + la_dur + r.uniform(1, 3)
    lin_dur = (mm_ts - lin_ts) + mm_dur + r.uniform(0.5, 2)
    w.op("aten::linear", lin_ts, lin_dur, dims)
    w.op("aten::t", t_ts, t_dur, dims)
    w.op("aten::transpose", tr_ts, tr_dur, dims)
    w.op("aten::as_strided", as_ts, as_dur, dims)
    w.op("aten::addmm", mm_ts, mm_dur, dims, flops=2 * 64 * 256 * 256)
    k_ts = max(gpu_t, la_ts + la_dur + r.uniform(2, 6))
    k_dur = r.uniform(2, 40)
    w.launch(la_ts, la_dur, _KERNELS[0], k_ts, k_dur)
    gpu_t = k_ts + k_dur
    # aten::relu > clamp_min > launch
    re_ts = lin_ts + lin_dur + r.uniform(1, 3)
    cl_ts = re_ts + r.uniform(1, 2)
    la2_ts = cl_ts + r.uniform(1, 3)
    la2_dur = r.uniform(3, 6)
    cl_dur = (la2_ts - cl_ts) + la2_dur + r.uniform(0.5, 1.5)
    re_dur = (cl_ts - re_ts) + cl_dur + r.uniform(0.5, 1.5)
    w.op("aten::relu", re_ts, re_dur, "[[64, 256]]")
    w.op("aten::clamp_min", cl_ts, cl_dur, "[[64, 256], []]")
    k2_ts = max(gpu_t, la2_ts + la2_dur + r.uniform(2, 6))
    k2_dur = r.uniform(1, 5)
    w.launch(la2_ts, la2_dur, _KERNELS[1], k2_ts, k2_dur)
    return re_ts + re_dur, k2_ts + k2_dur


def _write_events(w: _Writer, n_events: int, t0: float) -> None:
    r = w.rng
    step = 0
    t = t0
    gpu_t = t0
    body_budget = n_events - _METADATA_EVENTS
    while w.count + 3 + _LAYER_EVENTS <= body_budget:
        layers = min(r.randint(20, 60), (body_budget - w.count - 3) // _LAYER_EVENTS)
        step_ts = t
        fwd_ts = step_ts + r.uniform(5, 15)
        cpu_t, g0 = fwd_ts + r.uniform(2, 5), gpu_t
        for _ in range(layers):
            cpu_t, gpu_t = _layer(w, cpu_t + r.uniform(1, 4), gpu_t)
        fwd_dur = cpu_t - fwd_ts + r.uniform(1, 3)
        step_dur = fwd_ts + fwd_dur - step_ts + r.uniform(5, 20)
        w.external_id += 1
        w.span(
            "user_annotation", f"ProfilerStep#{step}", _PID, step_ts, step_dur,
            f'"External id": {w.external_id}, "Record function id": 0, "Ev Idx": 0',
        )
        w.span(
            "user_annotation", "forward", _PID, fwd_ts, fwd_dur,
            f'"External id": {w.external_id + 1}, "Record function id": 0, "Ev Idx": 1',
        )
        w.external_id += 1
        w._emit(
            f'  {{\n    "ph": "X", "cat": "gpu_user_annotation", "name": "forward", "pid": 0, '
            f'"tid": {_GPU_TID},\n    "ts": {g0:.3f}, "dur": {max(gpu_t - g0, 0.001):.3f},\n'
            f'    "args": {{\n      "External id": {w.external_id}\n    }}\n  }}'
        )
        t = step_ts + step_dur + r.uniform(1, 5)
        step += 1
    while w.count < body_budget:  # pad with leaf ops so the count is exact
        w.op("aten::empty", t, r.uniform(0.5, 2), "[[64]]")
        t += 3
    w.metadata("process_name", _PID, 0, '"name": "python3"', t0)
    w.metadata("process_labels", _PID, 0, '"labels": "CPU"', t0)
    w.metadata("process_name", 0, 0, '"name": "python3"', t0)
    w.metadata("process_labels", 0, 0, '"labels": "GPU 0"', t0)
    w.metadata("thread_name", 0, _GPU_TID, '"name": "stream 7 "', t0)
    w.metadata("thread_name", _PID, _PID, f'"name": "thread {_PID} (python3)"', t0)


def write_synthetic_trace(
    path: str | Path, n_events: int, gz: bool = False, seed: int = 0
) -> Path:
    """Write a Kineto-style trace with exactly ``n_events`` entries in ``traceEvents``.

    ``n_events`` must be at least 6 (the metadata events). ``gz=True`` gzips the output
    (name it ``*.json.gz``). The result is deterministic for a given ``seed``.
    """
    if n_events < _METADATA_EVENTS:
        raise ValueError(f"n_events must be at least {_METADATA_EVENTS}, got {n_events}")
    path = Path(path)
    raw = open(path, "wb")  # noqa: SIM115 - wrapped below, closed in finally
    try:
        binary: Any = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) if gz else raw
        with io.TextIOWrapper(binary, encoding="utf-8", write_through=False) as out:
            out.write(_HEADER)
            writer = _Writer(out, random.Random(seed))
            _write_events(writer, n_events, t0=5164774188000.0)
            out.write('\n  ],\n  "traceName": "synthetic"\n}\n')
    finally:
        raw.close()
    return path
