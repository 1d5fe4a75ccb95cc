"""``autoprof diff --gate``: pass, fail or cannot tell, from the change's interval."""

from __future__ import annotations

import numpy as np

from autoprof.analysis.diff.gate import answer
from autoprof.analysis.diff.significance import CPU_NOISE_FLOOR_PCT, repeated_change


def _runs(rng: np.random.Generator, medians_ms: list[float], steps: int = 5,
          step_sd: float = 0.03) -> list[list[float]]:
    return [list(m * np.exp(rng.normal(0.0, step_sd, steps))) for m in medians_ms]


def test_a_2_7x_regression_over_two_disagreeing_runs_a_side_is_never_a_pass() -> None:
    """Two runs a side, every after-run at least 1.75x every before-run (51.6 / 51.8 ms
    against 219 / 90.7 ms): the after-side's own runs disagree 2.4x, so the interval is wide;
    the gate may not be able to tell, but it never passes."""
    rng = np.random.default_rng(0)
    change = repeated_change(_runs(rng, [51.6, 51.8]), _runs(rng, [219.0, 90.7]))
    found = answer(change, 5.0)
    assert found.kind != "pass" and found.exit_code != 0
    if found.kind == "cannot tell":
        assert "run(s) a side" in found.text or "cannot settle" in found.text


def test_the_answer_follows_the_interval_against_the_gate() -> None:
    rng = np.random.default_rng(1)
    change = repeated_change(_runs(rng, [100.0] * 3), _runs(rng, [130.0] * 3))
    low, high = change.ci_low_pct, change.ci_high_pct
    assert low is not None and high is not None and low < high
    assert answer(change, low - 1.0).kind == "fail"
    assert answer(change, high).kind == "pass"
    middle = answer(change, (low + high) / 2)
    assert middle.kind == "cannot tell" and middle.exit_code == 3


def test_same_program_pairs_rarely_fail_and_a_doubling_never_passes() -> None:
    """Simulated recordings: each run's level drawn with a between-run spread at the CPU
    floor, each step with its own noise; one run a side and three. Same-program pairs fail a
    5% gate at most 1 time in 20; a planted 2x slowdown never passes."""
    rng = np.random.default_rng(2)
    spread = np.log1p(CPU_NOISE_FLOOR_PCT / 100.0)
    for runs in (1, 3):
        null_fails = slow_passes = 0
        trials = 60
        for _ in range(trials):
            a = _runs(rng, list(100.0 * np.exp(rng.normal(0.0, spread, runs))))
            same = _runs(rng, list(100.0 * np.exp(rng.normal(0.0, spread, runs))))
            slow = _runs(rng, list(200.0 * np.exp(rng.normal(0.0, spread, runs))))
            null_fails += answer(repeated_change(a, same, resamples=1000), 5.0).kind == "fail"
            slow_passes += answer(repeated_change(a, slow, resamples=1000), 5.0).kind == "pass"
        assert null_fails <= trials / 20, (runs, null_fails)
        assert slow_passes == 0, (runs, slow_passes)


def test_the_gate_in_json_is_valid_against_the_schema() -> None:
    from autoprof.analysis.report.schema import diff_errors

    rng = np.random.default_rng(3)
    change = repeated_change(_runs(rng, [100.0] * 2), _runs(rng, [104.0] * 2))
    obj = {"gate": answer(change, 5.0).to_json()}
    errors = [e for e in diff_errors(obj) if "gate" in e]
    assert errors == []
    obj["gate"]["answer"] = "maybe"
    assert any("gate" in e for e in diff_errors(obj))


def test_runs_needed_from_an_assumed_spread_are_called_a_guess() -> None:
    """One run a side: the spread is the floor, assumed, so the runs it asks for are a guess
    that repeats correct; from repeats the count stands on the measured spread."""
    rng = np.random.default_rng(3)
    one = answer(repeated_change(_runs(rng, [100.0], steps=3), _runs(rng, [125.0], steps=3)),
                 5.0)
    assert one.kind == "cannot tell" and "a guess until repeats measure" in one.text
    rep = answer(repeated_change(_runs(rng, [100.0, 104.0, 97.0]),
                                 _runs(rng, [160.0, 150.0, 170.0])), 55.0)
    assert rep.kind == "cannot tell" and "measured from the repeats" in rep.text
    assert "a guess" not in rep.text
