"""GPU-only (``pytest -m gpu``): torch's ``trace_only``, which autoprof's profiler runs with,
writes the same CUDA trace as a profiler without it (kernels, runtime calls, their flows and
every field but the ids of one profile)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from autoprof.record.session.driver import trace_only  # noqa: E402

pytestmark = pytest.mark.gpu

_PER_RUN = ("External id", "Record function id", "Ev Idx", "correlation", "Addr",
            "Python id", "Sequence number", "queued", "stream", "Total Allocated",
            "Total Reserved")  # ids of one profile, and the allocator's state


def _events(path: Path, **options: Any) -> Counter[tuple[Any, ...]]:
    import torch.profiler as tp

    x = torch.randn(256, 256, device="cuda", requires_grad=True)
    w = torch.randn(256, 256, device="cuda", requires_grad=True)
    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.CUDA],
                    record_shapes=True, with_flops=True,
                    schedule=tp.schedule(wait=0, warmup=1, active=3),
                    on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
                    **options) as prof:
        for _ in range(4):
            with tp.record_function("step"):
                (x @ w).relu().sum().backward()
            prof.step()
    trace = json.loads(path.read_text())
    return Counter(
        (e.get("name"), e.get("cat"), e.get("ph"),
         tuple(sorted((k, json.dumps(v)) for k, v in e.get("args", {}).items()
                      if k not in _PER_RUN)))
        for e in trace["traceEvents"])


def test_trace_only_writes_the_same_cuda_trace(tmp_path):
    config = trace_only(with_stack=False)
    if not config:
        pytest.skip("this torch has no trace_only")
    _events(tmp_path / "warm.json")  # CUDA, cuBLAS and CUPTI set up outside the two
    plain = _events(tmp_path / "plain.json")
    lean = _events(tmp_path / "trace_only.json", **config)
    assert lean == plain
    assert any(cat == "kernel" for _, cat, _, _ in lean)
