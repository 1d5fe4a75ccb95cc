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


def _seen_by_the_calls(monkeypatch, **options: object) -> list[str | None]:
    """TEARDOWN_CUPTI as each call of a decorated function saw it (CUDA itself simulated:
    the conditions are tested above)."""
    monkeypatch.delenv(TEARDOWN_ENV, raising=False)
    monkeypatch.setattr(cupti, "teardown_wanted", lambda *args: True)
    seen: list[str | None] = []

    def step(x: torch.Tensor) -> torch.Tensor:
        seen.append(os.environ.get(TEARDOWN_ENV))
        return x + 1

    fn = autoprof(name="cupti_teardown", **options)(step)
    for _ in range(WINDOW_CALLS + 2):
        assert torch.equal(fn(torch.ones(2)), torch.ones(2) + 1)
    fn.autoprof_session.flush()
    assert TEARDOWN_ENV not in os.environ
    return seen


def test_without_a_lines_step_the_variable_is_set_while_the_profiler_lives(monkeypatch,
                                                                           traces_root):
    seen = _seen_by_the_calls(monkeypatch, source_lines=False)
    assert seen[:3] == [None, None, None]  # untraced warm-up calls: no profiler yet
    assert seen[3:WINDOW_CALLS] == ["1"] * (WINDOW_CALLS - 3)  # the profiler's steps
    assert seen[WINDOW_CALLS:] == [None, None]  # after the window: put back


def test_a_run_with_a_lines_step_leaves_the_variable_alone(monkeypatch, traces_root):
    """The lines step's own profiler stops inside the window: with the variable set before that
    stop, or only after it, the measured steps on the H200 held no kernel at all
    (docs/gpu-validation.md, "After the window")."""
    seen = _seen_by_the_calls(monkeypatch)
    assert seen == [None] * (WINDOW_CALLS + 2)


def test_on_the_h200_the_calls_after_the_window_kept_their_pace_with_teardown():
    """benchmarks/results-h200-cupti-teardown.json (benchmarks/gpu/cupti_teardown.py, 8
    recordings per environment, the truth recorder's schedule: no lines step): the median
    iteration after the window over the fastest untraced one was 1.21x with CUPTI kept, 1.03x
    as autoprof runs; every recording, the one that replays a CUDA graph after the window
    included, ran to its end with the same kernels in its trace under every environment."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "results-h200-cupti-teardown.json"
    report = json.loads(path.read_text())
    medians = report["medians_after_x"]
    assert medians["kept"] == pytest.approx(1.214, abs=1e-3)
    assert medians["autoprof"] == pytest.approx(1.03, abs=1e-3)
    assert medians["preset"] == pytest.approx(1.021, abs=1e-3)
    rows = report["recordings"]
    assert len(rows) == 24 and all(r["rc"] == 0 for r in rows)
    assert {r["workload"] for r in rows} >= {"graph_program"}
    for workload in ("seed_512", "mlp_infer_b32", "sync_nonzero_b4096"):
        counts = {r["kernels_recorded"] for r in rows if r["workload"] == workload}
        assert len(counts) == 1 and counts.pop() > 0, workload
    graph = [r["kernels_recorded"] for r in rows if r["workload"] == "graph_program"]
    assert min(graph) >= 186  # its replays' kernels: 186-194 a recording
