"""What is timed is the fix as a user calls it, not the harness around it: a fake fix whose
general wrapper costs a known time, the CUDA-graph path's structure (torch.cuda mocked), the
harness's own cost reported apart, and predictions beside measurements."""

from __future__ import annotations

import json
import statistics
import time
from types import SimpleNamespace

import pytest
import torch

from autoprof.record.whatif import FIXES, try_fixes, what_if
from autoprof.record.whatif.fixes.base import Applied, Fix
from autoprof.record.whatif.result import PREDICTION_MISS, FixResult, prediction_check

CALL_US = 300.0  # the function's own cost
WRAPPER_US = 3000.0  # what the fake fix's general-purpose wrapper adds per call


def _busy(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def _work(x):
    _busy(CALL_US)
    return x * 2


def _fake_fix() -> Fix:
    """A fix whose ``fn`` (any call's arguments) pays a slow wrapper, as the CUDA graph's input
    refresh did, while the call a user makes (``user_call``) is the function alone."""

    def apply(call):
        def wrapped(*args, **kwargs):
            _busy(WRAPPER_US)
            return _work(*args, **kwargs)

        return Applied(wrapped, user_call=lambda args, kwargs: lambda: _work(*args, **kwargs))

    return Fix("fake-graph", "a fix with a slow general wrapper", lambda call: None, apply)


def test_the_fix_is_timed_as_the_user_calls_it_not_through_its_wrapper(monkeypatch):
    monkeypatch.setitem(FIXES, "fake-graph", _fake_fix())
    _, trials = try_fixes(_work, (torch.ones(3),), {}, ["fake-graph"], samples=5)
    r = trials[0].result
    assert r.outputs_match is True, r
    # the wrapper's 3 ms would make it ~11x slower; timed as called, it costs what _work costs
    assert CALL_US <= r.fixed_us < CALL_US + WRAPPER_US / 3, r
    assert r.measured_speedup > 0.5  # through the wrapper: about 0.09


def test_the_harness_cost_is_measured_apart_and_never_subtracted(monkeypatch, tmp_path):
    monkeypatch.setitem(FIXES, "fake-graph", _fake_fix())
    results = what_if(_work, (torch.ones(3),), {}, ("fake-graph",), run_dir=tmp_path,
                      samples=5)
    r = results[0]
    assert r["harness_us"] is not None and 0 < r["harness_us"] < 50  # a Python call, not 300 us
    assert r["fixed_us"] >= CALL_US  # the harness is inside the time, not taken out of it
    record = json.loads((tmp_path / "whatif.json").read_text())
    assert record["harness_us"] == pytest.approx(r["harness_us"])


class _FakeGraph:
    def __init__(self):
        self.replays = 0
        self.capturing = False

    def replay(self):
        self.replays += 1


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch.cuda's stream and graph API replaced by CPU stand-ins: the capture runs the
    function eagerly once; replay only counts."""
    import contextlib

    stream = SimpleNamespace(wait_stream=lambda other: None)
    monkeypatch.setattr(torch.cuda, "Stream", lambda: stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: stream)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", lambda g: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)


def test_the_graphs_timed_call_copies_the_inputs_then_replays_and_nothing_more(
        fake_cuda, monkeypatch):
    from autoprof.record.whatif.call import Call
    from autoprof.record.whatif.fixes import cuda_graph

    def step(x, extra):
        return x * 2 + extra["b"]

    call = Call(step, (torch.zeros(3), {"b": torch.zeros(3)}), {})
    applied = cuda_graph._apply(call)
    x, b = torch.ones(3), torch.full((3,), 5.0)
    timed = applied.bind((x, {"b": b}), {})
    graph = applied.fn.graph
    static_x = applied.fn.__closure__  # the static inputs live with the replay
    assert static_x is not None

    def no_walk(*a, **k):
        raise AssertionError("the timed call walks the arguments again")

    monkeypatch.setattr(cuda_graph, "tensors_in", no_walk)  # paired once, at bind time
    out = timed()
    assert graph.replays == 1
    copies = [t._version for t in _statics(applied)]
    timed()
    timed()  # unchanged inputs are copied anyway: the copy is part of what the fix costs
    assert graph.replays == 3
    assert all(v > c for v, c in zip((t._version for t in _statics(applied)), copies,
                                     strict=True))
    assert torch.equal(_statics(applied)[0], x) and torch.equal(_statics(applied)[1], b)
    assert out is timed()  # the graph's static output, as a replay returns it


def test_the_graphs_same_inputs_call_replays_alone(fake_cuda, monkeypatch):
    from autoprof.record.whatif.call import Call
    from autoprof.record.whatif.fixes import cuda_graph

    applied = cuda_graph._apply(Call(lambda x, y: x + y, (torch.zeros(2), torch.zeros(2)), {}))
    x, y = torch.ones(2), torch.full((2,), 3.0)
    same = applied.bind_same_inputs((x, y), {})
    assert same is not None
    # the call's values are in the static inputs once bound: a replay computes on them
    assert torch.equal(_statics(applied)[0], x) and torch.equal(_statics(applied)[1], y)
    versions = [t._version for t in _statics(applied)]
    graph = applied.fn.graph
    out = same()
    same()
    assert graph.replays == 2
    assert [t._version for t in _statics(applied)] == versions  # nothing copied per call
    assert out is same()


def _statics(applied):
    """The graph's static input tensors, from the replay wrapper's closure."""
    from autoprof.record.whatif.fixes.cuda_graph import _StaticInputs

    for cell in applied.fn.__closure__:
        if isinstance(cell.cell_contents, _StaticInputs):
            return cell.cell_contents.static
    raise AssertionError("no static inputs")


def test_the_graphs_timed_call_refuses_other_inputs(fake_cuda):
    from autoprof.record.whatif.call import Call
    from autoprof.record.whatif.fixes import cuda_graph

    applied = cuda_graph._apply(Call(lambda x, y: x + y, (torch.zeros(2), torch.zeros(2)), {}))
    with pytest.raises(ValueError, match="captured with 2 input tensors, this call passes 1"):
        applied.bind((torch.ones(2),), {})


def test_a_prediction_beside_each_measurement_and_a_miss_beyond_25_percent():
    assert FixResult("x", "", True, "faster").to_dict()["predicted_speedup"] is None
    r = FixResult("cuda-graph", "", True, "faster", speedup=2.2)
    r.set_prediction(5.4)
    assert r.predicted_speedup == 5.4 and r.prediction_missed is True
    assert r.prediction_error_pct == pytest.approx((5.4 - 2.2) / 2.2 * 100)
    r.set_prediction(2.4)
    assert r.prediction_missed is False
    r.set_prediction(None)
    assert (r.predicted_speedup, r.prediction_error_pct, r.prediction_missed) == (None,) * 3
    edge = 1 + PREDICTION_MISS
    assert prediction_check(edge * 0.999, 1.0)[1] is False
    assert prediction_check(edge * 1.01, 1.0)[1] is True
    assert prediction_check(3.0, None) == (None, None)
    differ = FixResult("bf16", "", True, "outputs differ", measured_speedup=2.0)
    differ.set_prediction(1.0)  # judged against the time ratio when there is no speedup
    assert differ.prediction_missed is True


def test_a_prediction_with_an_interval_misses_only_when_the_measurement_is_outside_it():
    from autoprof.analysis.report.whatif_text import missed_because

    r = FixResult("pin-memory", "", True, "faster", speedup=2.0)
    r.set_prediction(1.5, (1.2, 2.5))  # 25% off, but the measured gain is inside the interval
    assert r.prediction_missed is False and (r.predicted_low, r.predicted_high) == (1.2, 2.5)
    r.set_prediction(1.9, (1.8, 1.95))  # 5% off, outside the narrow interval it stated
    assert r.prediction_missed is True
    assert missed_because(r.to_dict()) == "measured outside its interval 1.80-1.95x"
    r.set_prediction(3.0)
    assert r.predicted_low is None and missed_because(r.to_dict()) == "over 25% off"
    assert prediction_check(1.0, 2.0, (2.0, 2.0)) == (-50.0, False)  # the bounds are inside


def test_what_if_fills_predictions_from_the_summary(monkeypatch):
    monkeypatch.setitem(FIXES, "fake-graph", _fake_fix())
    from support.reports import report

    summary = report(is_cuda=False, opportunities=[
        {"cause": "host_launch", "fix": "fake-graph", "predicted_speedup": 9.0}])
    r = what_if(_work, (torch.ones(3),), {}, ("fake-graph",), report=summary, samples=3)[0]
    assert r["predicted_speedup"] == 9.0 and r["prediction_missed"] is True
    assert r["prediction_error_pct"] > 100


def test_a_speedup_is_never_shown_outside_its_own_interval():
    """The ratio of the medians can fall outside the paired pairs' interval on scattered
    samples (here 15.0x against 1.77-14.46x): the interval is stretched to hold it."""
    from autoprof.record.whatif.ab import paired_ratio
    from autoprof.record.whatif.harness import Timing
    from autoprof.record.whatif.trial import _fill, fill_same_inputs

    def timing(samples: list[float]) -> Timing:
        ordered = sorted(samples)
        return Timing(statistics.median(samples), ordered[1], ordered[-2], tuple(samples), 1,
                      "perf-counter")

    base = timing([30, 30, 30, 11, 11, 30, 10])
    fixed = timing([2, 9, 2, 9, 9, 2, 2])
    iv = paired_ratio(list(base.samples_us), list(fixed.samples_us))
    assert 1 / iv.low < 15.0  # the paired interval alone leaves the estimate out
    r = FixResult("fake", "", True, "faster")
    _fill(r, base, fixed, SimpleNamespace(match=True, max_abs_error=0.0, tolerance=0.0,
                                          problem=None), 0.0)
    assert r.speedup == 15.0 and r.speedup_low <= r.speedup <= r.speedup_high
    assert r.speedup_high == 15.0 and r.status == "faster"
    fill_same_inputs(r, base, fixed)
    assert r.same_inputs_speedup_low <= r.same_inputs_speedup <= r.same_inputs_speedup_high
