"""One statistic, stated once: the noise as a ratio band both ways, shares named for what they
are, buckets labelled by their statistic."""

from __future__ import annotations

import re

from autoprof.analysis.diff import diff_facts, render_markdown, render_text
from autoprof.analysis.diff.significance import median_change, noise_band
from tests.analysis.diff.test_diff import _facts, checked


def _band(text: str) -> tuple[float, float]:
    m = re.search(r"changes between ([\d.]+)x and ([\d.]+)x cannot be told from noise", text)
    assert m, text
    return float(m.group(1)), float(m.group(2))


def test_the_band_is_symmetric_in_ratio_and_never_below_zero() -> None:
    for pct in (5.0, 50.0, 192.3, 390.3):
        low, high = _band(noise_band(pct))
        assert 0 < low < 1 < high
        assert abs(low * high - 1) < 0.02  # 1/high, to the printed digits
        assert abs(high - (1 + pct / 100)) < 0.006


def test_a_large_faster_change_is_not_beside_a_percentage_band_it_cannot_reach() -> None:
    """A -76% change with a wide interval: no 'changes under 192%' (no step gets 192%
    faster); the band says both directions as ratios, once."""
    a = _facts([1000.0, 1400.0, 700.0, 1300.0, 800.0])
    b = _facts([240.0, 400.0, 150.0, 300.0, 200.0])
    d = checked(diff_facts(a, b))
    text = render_text(d)
    assert "changes under" not in text
    assert text.count("cannot be told from noise") == 1
    low, high = _band(text)
    assert low < 1 < high
    assert "changes under" not in render_markdown(d)


def test_shares_are_named_against_the_step_change_and_buckets_by_their_statistic() -> None:
    a = _facts([1000.0, 1004.0, 996.0, 1002.0, 998.0])
    b = _facts([2000.0, 2004.0, 1996.0, 2002.0, 1998.0],
               buckets_us={"gpu_compute": 1500.0, "host_launch": 500.0})
    d = checked(diff_facts(a, b))
    for out in (render_text(d), render_markdown(d)):
        assert "% of the change" not in out and "| share |" not in out
        assert "against the step's change" in out or "against step's change" in out
        assert "mean per step" in out and "need not add to 100%" in out


def test_a_no_change_reason_states_the_band_once() -> None:
    a = [1000.0, 1000.5, 999.5, 1000.2, 999.8]
    change = median_change(a, [v * 1.05 for v in a])
    assert change.verdict == "no significant change"
    assert change.reason.count("cannot be told from noise") == 1
