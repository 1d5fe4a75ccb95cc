"""What-if labels come from the speedup's interval: never 'no change' beside 0.70x."""

from __future__ import annotations

from autoprof.analysis.report.whatif_text import whatif_outcome
from autoprof.record.whatif.compare import Comparison
from autoprof.record.whatif.harness import Timing
from autoprof.record.whatif.result import FixResult
from autoprof.record.whatif.trial import _fill


def _timing(values: list[float]) -> Timing:
    s = sorted(values)
    return Timing(s[len(s) // 2], s[len(s) // 4], s[3 * len(s) // 4], tuple(values), 1,
                  "perf-counter")


def _result(base: list[float], fixed: list[float]) -> FixResult:
    r = FixResult("compile", "doc", applicable=True, status="raised")
    _fill(r, _timing(base), _timing(fixed), Comparison(True, 0.0, 1e-4), 0.0)
    return r


def test_a_noisy_ratio_far_from_one_is_cannot_tell_with_what_would_settle_it() -> None:
    # pairs that disagree wildly: the median ratio is far from 1, the interval holds 1
    base = [100.0, 100.0, 100.0, 100.0, 100.0]
    fixed = [30.0, 300.0, 85.0, 160.0, 60.0]
    r = _result(base, fixed)
    assert r.speedup is not None and abs(r.speedup - 1) > 0.1
    assert r.speedup_low is not None and r.speedup_high is not None
    assert r.speedup_low < 1 < r.speedup_high
    assert r.status == "cannot tell" and r.settle
    text = whatif_outcome(r.to_dict())
    assert text.startswith("cannot tell") and "no change" not in text and "95% CI" in text


def test_a_consistent_speedup_is_faster_and_its_interval_is_stated() -> None:
    r = _result([100.0, 102.0, 98.0, 101.0, 99.0], [50.0, 51.0, 49.5, 50.2, 49.8])
    assert r.status == "faster" and r.settle is None
    assert r.speedup_low is not None and r.speedup_high is not None
    assert r.speedup_low <= 2.0 <= r.speedup_high
    r = _result([50.0, 51.0, 49.5, 50.2, 49.8], [100.0, 102.0, 98.0, 101.0, 99.0])
    assert r.status == "slower"


def test_an_old_no_change_record_is_not_shown_as_no_change() -> None:
    old = {"fix": "compile", "status": "no change", "speedup": 1.18, "speedup_low": 0.29,
           "speedup_high": 6.54, "outputs_match": True}
    text = whatif_outcome(old)
    assert text.startswith("cannot tell, 1.18x") and "0.29-6.54" in text
    # its 0.29-6.54 were quartile ratios, not an interval: never labelled a 95% CI
    assert "95% CI" not in text and "quartile ratios" in text


def test_the_viewer_states_what_the_report_states() -> None:
    from autoprof.viewer.views.whatif import _outcome

    r = _result([100.0] * 5, [30.0, 300.0, 85.0, 160.0, 60.0]).to_dict()
    line = _outcome(r)
    assert line.startswith("cannot tell, ") and "95% CI" in line and r["settle"] in line
    old = {"status": "no change", "speedup": 1.18, "speedup_low": 0.29, "speedup_high": 6.54}
    assert _outcome(old).startswith("cannot tell, 1.18x (quartile ratios")
