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

WINDOW_CALLS = 3 + Schedule().total_steps  # the default warm-up calls, then its schedule


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


def test_the_variable_is_set_while_the_profiler_lives_and_gone_after_the_window(monkeypatch,
                                                                                 traces_root):
    """The driver's wiring (CUDA itself is simulated: the conditions are tested above)."""
    monkeypatch.delenv(TEARDOWN_ENV, raising=False)
    monkeypatch.setattr(cupti, "teardown_wanted", lambda *args: True)
    seen: list[str | None] = []

    def step(x: torch.Tensor) -> torch.Tensor:
        seen.append(os.environ.get(TEARDOWN_ENV))
        return x + 1

    fn = autoprof(name="cupti_teardown")(step)
    for _ in range(WINDOW_CALLS + 2):
        assert torch.equal(fn(torch.ones(2)), torch.ones(2) + 1)
    fn.autoprof_session.flush()
    assert seen[:3] == [None, None, None]  # untraced warm-up calls: no profiler yet
    assert seen[3:WINDOW_CALLS] == ["1"] * (WINDOW_CALLS - 3)  # the profiler's steps
    assert seen[WINDOW_CALLS:] == [None, None]  # after the window: put back
    assert TEARDOWN_ENV not in os.environ


def test_on_the_h200_the_calls_after_the_window_kept_their_pace_with_teardown():
    """benchmarks/results-h200-cupti-teardown.json (benchmarks/gpu/cupti_teardown.py, 8
    recordings per environment): the median iteration after the window over the fastest
    untraced one was 1.21x with CUPTI kept, 1.01x as autoprof now runs, and every recording,
    the one that replays a CUDA graph after the window included, ran to its end."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "results-h200-cupti-teardown.json"
    report = json.loads(path.read_text())
    medians = report["medians_after_x"]
    assert medians["kept"] == pytest.approx(1.2145, abs=1e-3)
    assert medians["autoprof"] == pytest.approx(1.014, abs=1e-3)
    assert medians["preset"] == pytest.approx(1.075, abs=1e-3)
    rows = report["recordings"]
    assert len(rows) == 24 and all(r["rc"] == 0 for r in rows)
    assert {r["workload"] for r in rows} >= {"graph_program"}
