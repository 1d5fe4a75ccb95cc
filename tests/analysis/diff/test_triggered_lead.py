"""A triggered window's lead: how much slower, and how sure, from the untraced step times the
watcher timed (the trigger's samples), whatever the few profiled steps say; the profiled
steps' diff after it as the why, its step time labelled as theirs; an older manifest without
the samples still reads (the trigger's two medians, no interval, said)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autoprof.analysis.diff.causes import Cause
from autoprof.analysis.diff.comparability import Comparability
from autoprof.analysis.diff.result import Diff
from autoprof.analysis.diff.significance import median_change
from autoprof.analysis.diff.triggered import Lead
from autoprof.analysis.diff.untraced import untraced
from autoprof.runfolder.trigger import TriggerRecord

RUN_ID = "20260101-000000-abcdef"


def _steps(median_us: float, n: int, seed: int, spread: float = 0.05) -> tuple[float, ...]:
    """``n`` step times around ``median_us`` (log-normal, ``spread`` sd), rounded to µs as
    the watcher writes them."""
    rng = np.random.default_rng(seed)
    return tuple(float(round(v)) for v in median_us * np.exp(rng.normal(0, spread, n)))


def _trigger(before: tuple[float, ...], after: tuple[float, ...],
             threshold_pct: float | None = 20.0) -> TriggerRecord:
    return TriggerRecord("drift", 420, 1.316663, 1.988905, RUN_ID, 1, None, None, before,
                         after, threshold_pct)


def test_a_slowdown_is_slower_with_an_interval_that_holds_the_true_ratio():
    truth = 1990 / 1320
    found = untraced(_trigger(_steps(1320, 50, 1), _steps(1990, 20, 2)))
    assert found.verdict == "slower"
    change = found.change
    assert change is not None and change.ci_low_pct is not None and change.ci_high_pct
    assert 1 + change.ci_low_pct / 100 <= truth <= 1 + change.ci_high_pct / 100
    assert (change.samples_a, change.samples_b) == (50, 20)
    assert "the baseline's 50 calls vs the 20 calls before the trigger" in found.line()


def test_the_same_level_is_no_change_and_few_noisy_calls_cannot_tell():
    same = untraced(_trigger(_steps(1320, 50, 3), _steps(1320, 20, 4)))
    assert same.verdict == "no change"
    noisy = untraced(_trigger(_steps(1320, 4, 5, spread=0.6), _steps(1450, 4, 6, spread=0.6)))
    assert noisy.verdict == "cannot tell"
    unknown = untraced(_trigger(_steps(1320, 50, 3), _steps(1320, 20, 4), threshold_pct=None))
    assert unknown.verdict == "cannot tell"  # no threshold to call it no change against


def test_an_older_manifest_without_samples_gives_the_medians_and_says_there_is_no_interval():
    raw = {"kind": "drift", "at_call": 420, "baseline_ms": 1.316663, "current_ms": 1.988905,
           "healthy_run_id": RUN_ID, "window": 1, "from_rank": None}
    record = TriggerRecord.from_manifest({"trigger": raw})
    assert record is not None
    found = untraced(record)
    assert found.verdict == "not judged" and found.change is None
    assert found.ratio == pytest.approx(1.988905 / 1.316663)
    assert "1.32 ms -> 1.99 ms, 1.51x" in found.line() and "no interval" in found.line()


def _profiled_diff() -> Diff:
    """Three profiled steps a side, inflated by the profiler and too few to tell (the case
    the untraced step time answers)."""
    step = median_change([3100.0, 3114.0, 3300.0], [3190.0, 3000.0, 3400.0],
                         noise_floor_pct=7.0)
    ops = [Cause("op", "aten::nonzero", 0.0, 280.0, None, "new"),
           Cause("op", "aten::linear", 742.0, 725.0, None)]
    buckets = [Cause("bucket", "host_sync", 0.0, 139.0, None)]
    return Diff("A", "B", Comparability("comparable", [], []), step, None, buckets=buckets,
                ops=ops)


def test_the_lead_states_the_untraced_verdict_first_and_the_profiled_steps_as_the_why():
    result = _profiled_diff()
    assert result.verdict == "no significant change"
    lead = Lead(_trigger(_steps(1320, 50, 1), _steps(1990, 20, 2)), Path("A"), result)
    lines = lead.text().splitlines()
    assert lines[1].strip().startswith("VERDICT: slower (the untraced step time")
    assert lines[2].strip().startswith("untraced step: 1.32 ms -> ") and "95% CI" in lines[2]
    assert lines[3].strip().startswith("WHY: the profiled steps")
    profiled = next(x for x in lines if "profiled step time" in x)
    assert "no significant change" in profiled
    assert any("the profiler's cost inflates them" in x for x in lines)
    data = lead.to_json()
    assert data["verdict"] == "slower" and data["untraced"]["samples_before"] == 50
    assert [c["name"] for c in data["why"]] == ["aten::nonzero"]  # the direction of the change
    share = data["why"][0]["share_of_change_pct"]
    assert share == pytest.approx(280 / (data["untraced"]["after_ms"]
                                         - data["untraced"]["before_ms"]) / 10)
    markdown = lead.markdown()
    assert markdown.startswith("## TRIGGERED WINDOW 1") and "**VERDICT: slower" in markdown
    assert "`aten::nonzero`" in markdown


def test_a_lead_without_its_healthy_window_still_gives_the_untraced_answer():
    lead = Lead(_trigger(_steps(1320, 50, 1), _steps(1990, 20, 2)), Path("gone"), None,
                "gone: the healthy window is not there")
    text = lead.text()
    assert "VERDICT: slower" in text and "the healthy window is not there" in text
    assert lead.to_json()["diff"] is None and lead.to_json()["why"] == []
