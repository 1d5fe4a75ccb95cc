"""Invariants of the overhead picture on generated traces (hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.diagbuild import FakeRun, Trace

from autoprof.analysis.metrics.overhead import overhead
from autoprof.analysis.metrics.steps import per_step
from autoprof.analysis.report.summary import summarize

launch = st.tuples(
    st.floats(0, 900),  # launch start inside the step
    st.floats(0.5, 30),  # launch call duration
    st.floats(0, 400),  # delay to the kernel start
    st.floats(0.1, 500),  # kernel duration
    st.sampled_from([7, 8]),  # stream
)
step = st.tuples(st.floats(50, 1000), st.lists(launch, max_size=5))


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=4))
def test_overhead_invariants(steps):
    t = Trace()
    ts = 0.0
    for i, (span, launches) in enumerate(steps):
        t.step(i, ts, span)
        for start, dur, delay, kdur, stream in launches:
            a = ts + min(start, span - 0.2)
            d = min(dur, ts + span - a - 0.1)
            t.launch(a, max(d, 0.05), a + max(d, 0.05) + delay, kdur, stream=stream)
        ts += span + 1.0
    events = t.frame()
    ov = overhead(events)
    table = per_step(events)
    assert len(table) == len(steps)
    assert (table["gpu_busy_us"] <= table["gpu_work_us"] + 1e-6).all()
    assert (table["gpu_idle_us"] >= 0).all()
    assert (table["gpu_idle_us"] <= table["gpu_window_us"] + 1e-6).all()
    if ov.kernels:
        assert 0 <= ov.gpu_busy_pct <= 100 + 1e-6
        assert ov.gpu_busy_us <= ov.self_gpu_us + 1e-6
        assert ov.launch_latency_us_p50 is not None and ov.launch_latency_us_p50 >= 0
        assert 0 <= ov.short_kernels <= ov.kernels
        assert ov.idle_gap_total_us <= ov.step_window_us + 1e-6
    else:
        assert ov.gpu_busy_pct is None
    json.dumps(summarize(FakeRun(events)).to_dict(), allow_nan=False)
