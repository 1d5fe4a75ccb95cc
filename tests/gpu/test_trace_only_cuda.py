"""GPU-only (``pytest -m gpu``): torch's ``trace_only``, which autoprof's profiler runs with,
writes the same CUDA trace as a profiler without it (kernels, runtime calls, their flows and
every field but the ids of one profile)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from support.profile_events import PER_RUN, profiled_events  # noqa: E402

from autoprof.record.session.driver import trace_only  # noqa: E402

pytestmark = pytest.mark.gpu

_PER_RUN = (*PER_RUN, "queued", "stream", "Total Allocated",
            "Total Reserved")  # ids of one profile, and the allocator's state


def test_trace_only_writes_the_same_cuda_trace(tmp_path):
    config = trace_only(with_stack=False)
    if not config:
        pytest.skip("this torch has no trace_only")
    # CUDA, cuBLAS and CUPTI set up outside the two compared
    profiled_events(tmp_path / "warm.json", "cuda", _PER_RUN)
    plain = profiled_events(tmp_path / "plain.json", "cuda", _PER_RUN)
    lean = profiled_events(tmp_path / "trace_only.json", "cuda", _PER_RUN, **config)
    assert lean == plain
    assert any(cat == "kernel" for _, cat, _, _ in lean)
