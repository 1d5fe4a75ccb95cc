"""Property: for any list of events, the loader either raises TraceError or returns a table
that satisfies every invariant (self time in [0, dur], no NaN ts/dur, parents enclose...)."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.invariants import check_events

from autoprof.analysis import TraceError, load

CATS = ["cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy",
        "gpu_user_annotation", "python_function", "", "weird"]
NAMES = ["aten::mm", "ProfilerStep#1", "ProfilerStep#2", "cudaLaunchKernel", "k", "<b>x</b>",
         "ünï", ""]

numbers = st.one_of(
    st.floats(min_value=-10, max_value=1e4, allow_nan=False),
    st.integers(min_value=-5, max_value=10_000),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, 5164774188520.814]),
)
ids = st.one_of(st.integers(min_value=-3, max_value=20), st.sampled_from(["Spans", "", "x"]),
                st.none(), st.floats(allow_nan=False, allow_infinity=False))
args = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={
        "correlation": st.one_of(st.integers(0, 8), st.text(max_size=3), st.none()),
        "External id": st.integers(-1, 8),
        "device": st.integers(0, 2),
        "stream": st.integers(0, 9),
        "flops": numbers,
        "Input Dims": st.lists(st.lists(st.integers(0, 64), max_size=3), max_size=3),
    }),
)
event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "X", "s", "f", "M", "i", "B"])},
    optional={
        "cat": st.sampled_from(CATS),
        "name": st.one_of(st.sampled_from(NAMES), st.integers()),
        "pid": ids,
        "tid": ids,
        "ts": numbers,
        "dur": numbers,
        "args": args,
        "id": st.integers(0, 8),
    },
)
documents = st.one_of(
    st.lists(event, max_size=40).map(lambda evs: {"traceEvents": evs}),
    st.lists(event, max_size=20),
    st.lists(st.one_of(event, st.integers(), st.text(max_size=5)), max_size=10)
    .map(lambda evs: {"traceEvents": evs}),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_only_trace_error_escapes_and_invariants_hold(document):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        path.write_text(json.dumps(document))  # NaN/Infinity literals included, as Python does
        try:
            run = load(path)
        except TraceError as err:
            assert "\n" not in str(err) and str(err).startswith(str(path))
            return
    events = run.events
    assert len(events) > 0
    check_events(events)
    assert not events["ts_us"].isna().any() and not events["dur_us"].isna().any()
