"""autoprof asks Kineto to let CUPTI go as its window ends (``TEARDOWN_CUPTI=1``), only for a
CUDA run on CUDA 12.6 or newer whose user did not set the variable, and puts it back after."""

from __future__ import annotations

import os

import pytest
import torch

from autoprof import autoprof
from autoprof.record.options import Schedule
from autoprof.record.session import cupti
from autoprof.record.session.cupti import TEARDOWN_ENV, CuptiTeardown, teardown_wanted


@pytest.mark.parametrize(("activities", "cuda", "environ", "wanted"), [
    (("cpu", "cuda"), "13.0", {}, True),
    (("cpu", "cuda"), "12.6", {}, True),
    (("cpu", "cuda"), "12.4", {}, False),  # CUPTI re-init after teardown crashes with graphs
    (("cpu", "cuda"), "11.8", {}, False),
    (("cpu", "cuda"), None, {}, False),  # a build without CUDA
    (("cpu", "cuda"), "not-a-version", {}, False),
    (("cpu",), "13.0", {}, False),  # no CUDA recorded: CUPTI never attached
    (("cpu", "cuda"), "13.0", {TEARDOWN_ENV: "0"}, False),  # the user's choice wins
    (("cpu", "cuda"), "13.0", {TEARDOWN_ENV: "1"}, False),  # already asked for
])
def test_teardown_is_wanted_only_where_safe_and_not_the_users_choice(activities, cuda, environ,
                                                                     wanted):
    assert teardown_wanted(activities, cuda, environ) is wanted


def test_set_then_restore_leaves_the_environment_as_it_was():
    environ: dict[str, str] = {"OTHER": "x"}
    teardown = CuptiTeardown(environ)
    teardown.set(("cpu", "cuda"), "13.0")
    assert environ == {"OTHER": "x", TEARDOWN_ENV: "1"} and teardown.active
    environ[TEARDOWN_ENV] = "0"  # torch's prepare_trace turns it off for inductor's graphs
    teardown.restore()
    assert environ == {"OTHER": "x"} and not teardown.active
    teardown.restore()  # twice is harmless
    assert environ == {"OTHER": "x"}


def test_a_users_setting_is_never_touched():
    environ = {TEARDOWN_ENV: "0"}
    teardown = CuptiTeardown(environ)
    teardown.set(("cpu", "cuda"), "13.0")
    teardown.restore()
    assert environ == {TEARDOWN_ENV: "0"}


def _watch_kineto(monkeypatch, methods: tuple[str, ...] = ("prepare_trace", "start_trace",
                                                         "stop_trace"),
                  ) -> list[tuple[str, str | None]]:
    """TEARDOWN_CUPTI as Kineto sees it at each call of `methods` of every torch profiler
    (the source-lines step's too), in order (CUDA itself simulated: the conditions are
    tested above)."""
    from torch.profiler.profiler import _KinetoProfile

    monkeypatch.delenv(TEARDOWN_ENV, raising=False)
    monkeypatch.setattr(cupti, "teardown_wanted", lambda *args: True)
    at_kineto: list[tuple[str, str | None]] = []
    for method in methods:
        def seen(self: _KinetoProfile, *args: object, _method: str = method,
                 _real: object = getattr(_KinetoProfile, method)) -> object:
            at_kineto.append((_method, os.environ.get(TEARDOWN_ENV)))
            return _real(self, *args)  # type: ignore[operator]
        monkeypatch.setattr(_KinetoProfile, method, seen)
    return at_kineto


def _seen_by_kineto(monkeypatch, **options: object) -> tuple[list[tuple[str, str | None]],
                                                            list[str | None]]:
    """The variable at each trace's prepare, start and stop, and as each call of a decorated
    function saw it."""
    at_kineto = _watch_kineto(monkeypatch)
    by_calls: list[str | None] = []

    def step(x: torch.Tensor) -> torch.Tensor:
        by_calls.append(os.environ.get(TEARDOWN_ENV))
        return x + 1

    fn = autoprof(name="cupti_teardown", **options)(step)
    calls = 3 + Schedule(**options.get("schedule", {})).total_steps  # type: ignore[arg-type]
    for _ in range(calls + 2):
        assert torch.equal(fn(torch.ones(2)), torch.ones(2) + 1)
    fn.autoprof_session.flush()
    assert TEARDOWN_ENV not in os.environ
    return at_kineto, by_calls


def _only_the_last_stop_tears_down(at_kineto: list[tuple[str, str | None]]) -> None:
    assert at_kineto[-1] == ("stop_trace", "1")
    assert all(value is None for _, value in at_kineto[:-1]), at_kineto


def test_with_a_lines_step_only_the_last_stop_sees_the_variable(monkeypatch, traces_root):
    """Set before the lines step's own profiler stopped, or before torch's trace was
    prepared, the teardown landed inside the measured steps: no kernel on the H200
    (docs/gpu-validation.md, "After the window")."""
    at_kineto, by_calls = _seen_by_kineto(monkeypatch)
    stops = [name for name, _ in at_kineto if name == "stop_trace"]
    assert len(stops) == 2  # the lines step's profiler, then torch's trace
    _only_the_last_stop_tears_down(at_kineto)
    assert by_calls == [None] * len(by_calls)  # no call of the user's ever sees it


def test_without_a_lines_step_too(monkeypatch, traces_root):
    at_kineto, by_calls = _seen_by_kineto(monkeypatch, source_lines=False)
    assert [name for name, _ in at_kineto].count("stop_trace") == 1
    _only_the_last_stop_tears_down(at_kineto)
    assert by_calls == [None] * len(by_calls)


def test_two_cycles_tear_down_after_the_second_only(monkeypatch, traces_root):
    schedule = {"wait": 1, "warmup": 1, "active": 1, "repeat": 2}
    at_kineto, _ = _seen_by_kineto(monkeypatch, source_lines=False, schedule=schedule)
    assert [name for name, _ in at_kineto].count("stop_trace") == 2
    _only_the_last_stop_tears_down(at_kineto)


def test_a_flush_inside_the_window_tears_down_at_its_stop(monkeypatch, traces_root):
    at_stop = _watch_kineto(monkeypatch, ("stop_trace",))
    fn = autoprof(name="cupti_flush", warmup=0, source_lines=False,
                  schedule={"wait": 0, "warmup": 1, "active": 5})(lambda x: x + 1)
    for _ in range(3):  # warm-up and two of five active steps
        fn(torch.ones(2))
    fn.autoprof_session.flush()
    assert at_stop == [("stop_trace", "1")] and TEARDOWN_ENV not in os.environ
